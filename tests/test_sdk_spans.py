"""The SDK's spans against a live server: every shortcut records a start and an end, and spans opened
inside a `with run.span(...)` block are its children (docs/sdk.md#nested-spans)."""

import asyncio
import datetime as dt
import time

import pytest
from django_scopes import scopes_disabled
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool

import groundrule
from governance.models import Span
from groundrule.integrations.langchain import GroundruleCallbackHandler

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(live_server, acme_key):
    with groundrule.Client(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01) as client:
        yield client


def spans_of(client, run_id) -> dict[str, dict]:
    return {s["name"]: s for s in client.iter_run(run_id, "spans")}


def times(span: dict) -> tuple[dt.datetime, dt.datetime]:
    assert span["started_at"] is not None and span["ended_at"] is not None, span["name"]
    return dt.datetime.fromisoformat(span["started_at"]), dt.datetime.fromisoformat(span["ended_at"])


def test_every_shortcut_records_a_start_and_an_end(client):
    with client.run(agent_name="research-agent") as run:
        before = dt.datetime.now(dt.UTC)
        run.record_tool_call("lookup", input={"q": 1}, output={"hits": 2})
        run.record_llm_call("gpt-4o-mini", prompt="Hi", response="Hello", duration_ms=1500)
        run.record_retrieval("rates", [{"source_id": "fed", "text": "…", "relevance": 0.9}], retrieval_time_ms=250)
        run.record_span("tool", "plain")
        given = before - dt.timedelta(seconds=3)
        run.record_tool_call("from-start", started_at=given)
        after = dt.datetime.now(dt.UTC)
    spans = spans_of(client, run.id)
    assert set(spans) == {"lookup", "gpt-4o-mini", "retrieval", "plain", "from-start"}
    for span in spans.values():
        started, ended = times(span)
        assert started <= ended and ended <= after + dt.timedelta(seconds=1)
    # Ended when recorded; without a start or a duration, an instant at that time.
    lookup = times(spans["lookup"])
    assert before <= lookup[0] == lookup[1] <= after
    llm = times(spans["gpt-4o-mini"])
    assert llm[1] - llm[0] == dt.timedelta(milliseconds=1500) and before <= llm[1] <= after
    retrieval = times(spans["retrieval"])
    assert retrieval[1] - retrieval[0] == dt.timedelta(milliseconds=250)
    assert times(spans["from-start"])[0] == given and before <= times(spans["from-start"])[1] <= after


def test_spans_inside_a_span_block_are_its_children(client):
    with client.run(agent_name="research-agent") as run:
        with run.span("tool", "agent-step") as step:
            run.record_retrieval("q", [{"source_id": "a", "text": "x", "relevance": 0.5}], name="search")
            with run.span("llm", "answer") as answer:
                time.sleep(0.02)
                run.record_tool_call("format")
            run.record_tool_call("explicit-root", parent_span_id="")
        run.record_tool_call("after")
    spans = spans_of(client, run.id)
    assert spans["agent-step"]["span_id"] == step.span_id and spans["agent-step"]["parent_span_id"] is None
    assert spans["search"]["parent_span_id"] == step.span_id
    assert spans["answer"]["parent_span_id"] == step.span_id and spans["answer"]["span_id"] == answer.span_id
    assert spans["format"]["parent_span_id"] == answer.span_id
    assert spans["explicit-root"]["parent_span_id"] is None
    assert spans["after"]["parent_span_id"] is None
    outer, inner = times(spans["agent-step"]), times(spans["answer"])
    assert outer[0] <= inner[0] <= inner[1] <= outer[1]


def test_a_span_block_of_one_run_is_not_the_parent_of_another_runs_spans(client):
    with client.run(agent_name="research-agent") as first, client.run(agent_name="research-agent") as second:
        with first.span("tool", "first-step"):
            second.record_tool_call("second-call")
            first.record_tool_call("first-call")
    assert spans_of(client, second.id)["second-call"]["parent_span_id"] is None
    first_spans = spans_of(client, first.id)
    assert first_spans["first-call"]["parent_span_id"] == first_spans["first-step"]["span_id"]


def test_async_tasks_started_inside_a_span_block_are_its_children(live_server, acme_key):
    async def main():
        async with groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1]) as client:
            async with client.run(agent_name="research-agent") as run:
                async with run.span("tool", "fan-out") as parent:

                    async def leg(n):
                        async with run.span("llm", f"leg-{n}"):
                            await asyncio.sleep(0.01)
                            await run.record_tool_call(f"tool-{n}")

                    await asyncio.gather(leg(1), leg(2))
                await run.record_llm_call("after", duration_ms=5)
            return parent.span_id, {s["name"]: s async for s in client.iter_run(run.id, "spans")}

    parent_id, spans = asyncio.run(main())
    assert spans["leg-1"]["parent_span_id"] == spans["leg-2"]["parent_span_id"] == parent_id
    assert spans["tool-1"]["parent_span_id"] == spans["leg-1"]["span_id"]
    assert spans["tool-2"]["parent_span_id"] == spans["leg-2"]["span_id"]
    assert spans["after"]["parent_span_id"] is None
    started, ended = times(spans["after"])
    assert ended - started == dt.timedelta(milliseconds=5)


class OneDocRetriever(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(id="fed-2023", page_content="The Fed raised rates.")]


@tool
def research(question: str) -> str:
    """Looks the question up in the knowledge base."""
    # LangChain hands the tool's run to what it calls (a context variable): the retriever is its child.
    return OneDocRetriever().invoke(question)[0].page_content


def test_langchain_nests_a_retriever_called_inside_a_tool(client):
    with client.run(agent_name="rag-agent") as run:
        handler = GroundruleCallbackHandler(run, report_grounding=False)
        assert research.invoke({"question": "Fed?"}, config={"callbacks": [handler]}) == "The Fed raised rates."
    with scopes_disabled():
        spans = {s.kind: s for s in Span.objects.filter(run_id=run.id)}
    assert spans["retrieval"].parent_span_id == spans["tool"].span_id
    assert spans["tool"].parent_span_id is None
    assert spans["tool"].started_at <= spans["retrieval"].started_at <= spans["retrieval"].ended_at
    assert spans["retrieval"].ended_at <= spans["tool"].ended_at
