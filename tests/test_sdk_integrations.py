"""The SDK's framework integrations against a live server: LangChain's callback handler with
langchain-core's own fake chat model, and the OpenAI Agents SDK output guardrail with a fixed model.
No network: the models are fakes, tracing to OpenAI is off."""

import asyncio

import pytest
from agents import Agent, OutputGuardrailTripwireTriggered, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from django_scopes import scopes_disabled
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools import tool
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

import groundrule
from governance.models import GroundingReport, Run, Span
from groundrule.integrations.langchain import GroundruleCallbackHandler
from groundrule.integrations.openai_agents import groundrule_output_guardrail

pytestmark = pytest.mark.django_db(transaction=True)
set_tracing_disabled(True)

FED = "In July 2023 the Federal Reserve raised its benchmark rate by 25 basis points."
ANSWER = "The Federal Reserve raised its benchmark rate by 25 basis points in July 2023."
CITING = {
    "min_citations": 0,
    "min_grounding_score": None,
    "require_source_grounding": True,
    "action_on_violation": "block",
}
VERIFIER_BLOCK = {
    "min_citations": 0,
    "min_grounding_score": None,
    "nli_check": True,
    "nli_phase": "mid_execution",
    "contradiction_action": "block",
    "unverifiable_action": "block",
    "max_unverifiable_ratio": 0.5,
}


@pytest.fixture
def client(live_server, acme_key):
    with groundrule.Client(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01) as client:
        yield client


def rows(model, **filters):
    with scopes_disabled():
        return list(model.objects.filter(**filters).order_by("id"))


# --- LangChain -----------------------------------------------------------------------------------


class FixedRetriever(BaseRetriever):
    documents: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return self.documents


@tool
def lookup_rate(year: int) -> str:
    """The Fed's benchmark rate change in a year."""
    return f"+25bp in {year}"


def rag_chain(answer: str):
    retriever = FixedRetriever(
        documents=[
            Document(id="fed-2023", page_content=FED, metadata={"source": "kb", "relevance_score": 0.93}),
            Document(id="ecb-2023", page_content="The ECB raised rates in July 2023.", metadata={"source": "kb"}),
        ]
    )
    prompt = ChatPromptTemplate.from_messages([("system", "Answer from: {context}"), ("human", "{question}")])
    model = FakeListChatModel(responses=[answer])

    def with_tool(inputs):
        inputs["rate"] = lookup_rate.invoke({"year": 2023})
        return inputs

    return (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | RunnableLambda(with_tool)
        | prompt
        | model
        | StrOutputParser()
    )


def test_langchain_records_llm_tool_and_retrieval_spans_and_reports_the_answer(client):
    with client.run(agent_name="rag-agent") as run:
        handler = GroundruleCallbackHandler(run)
        answer = rag_chain(ANSWER).invoke("What did the Fed do in July 2023?", config={"callbacks": [handler]})
        run_id = run.id
    assert answer == ANSWER

    spans = {s.kind: s for s in rows(Span, run_id=run_id)}
    assert set(spans) == {"llm", "tool", "retrieval"}
    assert spans["llm"].output == ANSWER and spans["llm"].duration_ms is not None
    assert spans["llm"].input[0][0] == {
        "role": "system",
        "content": f"Answer from: {FED}\nThe ECB raised rates in July 2023.",
    }
    assert spans["tool"].name == "lookup_rate" and spans["tool"].output == "+25bp in 2023"
    provenance = spans["retrieval"].attributes["provenance"]
    assert provenance["intent"]["text_queries"] == ["What did the Fed do in July 2023?"]
    (results,) = provenance["results_by_source"].values()
    assert [(r["source_id"], r["relevance"]) for r in results] == [("fed-2023", 0.93), ("ecb-2023", 1.0)]

    (report,) = rows(GroundingReport, run_id=run_id)
    assert report.output == ANSWER
    # Named by id, the sources took their text from what was retrieved.
    assert [(s["id"], s["text"]) for s in report.sources][:1] == [("fed-2023", FED)]
    assert rows(Run, pk=run_id)[0].status == "completed"


def test_langchain_block_raises_out_of_invoke(client, make_policy):
    make_policy(name="Cite your sources", rules={**CITING, "min_citations": 1})
    with pytest.raises(groundrule.PolicyViolationError) as raised:
        with client.run(agent_name="rag-agent") as run:
            rag_chain(ANSWER).invoke("Fed?", config={"callbacks": [GroundruleCallbackHandler(run)]})
    assert raised.value.decision.blocked
    assert rows(Run, pk=run.id)[0].status == "blocked"


def test_langchain_grounding_hook_adds_scores_and_citations(client, make_policy):
    make_policy(name="Cite your sources", rules={**CITING, "min_citations": 1})

    def score(answer, retrieved):
        return {"grounding_scores": [0.9], "citations": [retrieved[0]["source_id"]]}

    with client.run(agent_name="rag-agent") as run:
        rag_chain(ANSWER).invoke("Fed?", config={"callbacks": [GroundruleCallbackHandler(run, grounding=score)]})
    assert run.decisions[1].action == "allow"
    (report,) = rows(GroundingReport, run_id=run.id)
    assert report.citations == ["fed-2023"] and report.grounding_scores == [0.9]


# --- OpenAI Agents SDK ---------------------------------------------------------------------------


class FixedModel(Model):
    """Answers every turn with one fixed message, as a model would."""

    def __init__(self, text: str):
        self.text = text

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        *,
        previous_response_id=None,
        conversation_id=None,
        prompt=None,
    ):
        message = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=self.text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


SOURCES = [{"id": "fed-2023", "text": FED}]


def agent_for(run, text, sources=SOURCES):
    return Agent(
        name="support",
        instructions="Answer from the sources.",
        model=FixedModel(text),
        output_guardrails=[groundrule_output_guardrail(run, sources=lambda ctx: ctx.context["sources"])],
    )


def test_agents_guardrail_reports_the_output_and_passes_a_grounded_answer(client, make_policy):
    make_policy(name="Verified", rules=VERIFIER_BLOCK)
    with client.run(agent_name="support-agent") as run:
        result = asyncio.run(Runner.run(agent_for(run, ANSWER), "Fed?", context={"sources": SOURCES}))
        assert result.final_output == ANSWER
        (guard,) = result.output_guardrail_results
        assert guard.output.tripwire_triggered is False and guard.output.output_info["action"] == "allow"
    (report,) = rows(GroundingReport, run_id=run.id)
    assert report.output == ANSWER and report.sources[0]["id"] == "fed-2023"


def test_agents_guardrail_trips_on_block(client, make_policy):
    make_policy(name="Verified", rules=VERIFIER_BLOCK)
    contradicting = "The Federal Reserve cut its benchmark rate by 50 basis points in July 2023."
    with client.run(agent_name="support-agent") as run:
        with pytest.raises(OutputGuardrailTripwireTriggered) as tripped:
            asyncio.run(Runner.run(agent_for(run, contradicting), "Fed?", context={"sources": SOURCES}))
    info = tripped.value.guardrail_result.output.output_info
    assert info["action"] == "block" and "Verifier" in info["reason"]
    assert rows(Run, pk=run.id)[0].final_action == "block"


def test_agents_guardrail_with_the_async_client(live_server, acme_key):
    async def main():
        async with groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1]) as client:
            async with client.run(agent_name="support-agent") as run:
                result = await Runner.run(agent_for(run, ANSWER), "Fed?", context={"sources": SOURCES})
                return run.id, result

    run_id, result = asyncio.run(main())
    assert result.output_guardrail_results[0].output.tripwire_triggered is False
    assert rows(GroundingReport, run_id=run_id)[0].output == ANSWER
