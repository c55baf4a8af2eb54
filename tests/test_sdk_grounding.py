"""The SDK's side of issue 5 against a live server: the context rules the server sends at start and
run.decide_grounding, record_retrieval (sync and async), and quoted citations resolving against
what was retrieved."""

import asyncio

import pytest

import groundrule
from groundrule import PolicyViolationError

pytestmark = pytest.mark.django_db(transaction=True)

FED_TEXT = "In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points."
RESULTS = [
    {
        "source_id": "fed-2023",
        "source_type": "vector_kb",
        "relevance": 0.92,
        "text": FED_TEXT,
        "metadata": {"heading_path": "Rates > 2023"},
        "source_name": "knowledge_base",
    },
    {
        "source_id": "case-7",
        "source_type": "database",
        "relevance": 0.4,
        "text": "Case study seven.",
        "source_name": "case_studies",
    },
]
CONTRACT = {
    "citation_quotes": "required",
    "citations_must_resolve": True,
    "min_grounding_score": None,
    "min_citations": 1,
    "action_on_violation": "block",
}


@pytest.fixture
def client(live_server, acme_key):
    with groundrule.Client(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01) as client:
        yield client


@pytest.fixture
def connect(live_server, acme_key):
    def connect(**options) -> groundrule.AsyncClient:
        return groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01, **options)

    return connect


# --- the context decision -------------------------------------------------------------------------


def test_the_local_function_is_the_seed_decide_grounding():
    decision = groundrule.decide_grounding("x" * 11, [], {"context_mode": "attachments_only", "max_context_chars": 10})
    assert decision == groundrule.GroundingDecision("x" * 10 + groundrule.TRUNCATION_MARKER, True, True)
    assert groundrule.decide_grounding("text", ["doc"]).to_dict() == {
        "retrieved_text_for_prompt": "text",
        "include_attachments": True,
        "include_retrieved_text": True,
    }


def test_a_run_decides_with_the_rules_the_server_sent(client, make_policy):
    policy = make_policy(
        name="Attachments first",
        rules={"context_mode": "hybrid", "canonical_when_available": "prefer_attachments", "max_context_chars": 5},
        agents=["research-agent"],
    )

    with client.run(agent_name="research-agent") as run:
        context = run.grounding_context
        with_docs = run.decide_grounding("retrieved text", [{"id": "sop-12"}])
        without_docs = run.decide_grounding("retrieved text", [])

    assert context == {
        "policy_id": policy.pk,
        "policy_name": "Attachments first",
        "rules": {
            "context_mode": "hybrid",
            "canonical_when_available": "prefer_attachments",
            "include_retrieved_text": None,
            "max_context_chars": 5,
        },
    }
    assert run.decisions[0].grounding_context == context
    assert (with_docs.retrieved_text_for_prompt, with_docs.include_attachments) == ("", True)
    assert without_docs.retrieved_text_for_prompt == "retri\n... [truncated]"


def test_the_run_and_the_endpoint_agree(client, api, make_policy):
    make_policy(rules={"context_mode": "chunks_only", "max_context_chars": 3})

    with client.run(agent_name="research-agent") as run:
        local = run.decide_grounding("abcdef", ["doc"])
    remote = api.post(
        "/api/v1/grounding/decide/",
        {"agent_name": "research-agent", "retrieved_text": "abcdef", "prepared_documents": ["doc"]},
        format="json",
    ).json()

    assert {k: v for k, v in remote.items() if k != "grounding_context"} == local.to_dict()


def test_failing_open_decides_with_the_defaults():
    with groundrule.Client(base_url="http://127.0.0.1:9", api_key="gr_test", max_retries=0, timeout=0.5) as client:
        with client.run(agent_name="research-agent") as run:
            decision = run.decide_grounding("text", ["doc"])

    assert run.failed_open and run.grounding_context is None
    assert (decision.retrieved_text_for_prompt, decision.include_attachments) == ("text", True)


# --- record_retrieval ------------------------------------------------------------------------------


def test_record_retrieval_sends_the_provenance_record(client, api):
    with client.run(agent_name="research-agent") as run:
        stored = run.record_retrieval(
            ["fed rate 2023", "fed march hike"],
            RESULTS,
            scope="focused",
            filters={"knowledge_base": {"year": 2023}},
            total_results=8,
            deduplicated_to=2,
            retrieval_time_ms=45.2,
            intent_resolution_time_ms=120.5,
        )

    assert stored["kind"] == "retrieval" and stored["name"] == "retrieval"
    provenance = api.get(f"/api/v1/runs/{run.id}/spans/").json()["results"][0]["attributes"]["provenance"]
    assert provenance == {
        "intent": {
            "text_queries": ["fed rate 2023", "fed march hike"],
            "filters": {"knowledge_base": {"year": 2023}},
            "scope": "focused",
        },
        "results_by_source": {
            "knowledge_base": [
                {
                    "source_id": "fed-2023",
                    "source_type": "vector_kb",
                    "relevance": 0.92,
                    "text": FED_TEXT,
                    "metadata": {"heading_path": "Rates > 2023"},
                }
            ],
            "case_studies": [
                {"source_id": "case-7", "source_type": "database", "relevance": 0.4, "text": "Case study seven."}
            ],
        },
        "total_results": 8,
        "deduplicated_to": 2,
        "retrieval_time_ms": 45.2,
        "intent_resolution_time_ms": 120.5,
    }


def test_record_retrieval_takes_results_already_grouped_and_a_single_query(client, api):
    with client.run(agent_name="research-agent") as run:
        run.record_retrieval(
            "oauth grant types",
            {"docs": [{"source_id": "c1", "relevance": 1, "text": "t"}]},
            name="kb_search",
            attributes={"top_k": 5},
        )

    span = api.get(f"/api/v1/runs/{run.id}/spans/").json()["results"][0]
    assert span["name"] == "kb_search"
    assert span["attributes"] == {
        "top_k": 5,
        "provenance": {
            "intent": {"text_queries": ["oauth grant types"], "filters": {}},
            "results_by_source": {"docs": [{"source_id": "c1", "relevance": 1.0, "text": "t"}]},
        },
    }


def test_a_bad_record_is_refused_with_the_field_named(client):
    with client.run(agent_name="research-agent") as run:
        with pytest.raises(groundrule.GroundruleAPIError) as info:
            run.record_retrieval(["q"], [{"source_id": "c1", "relevance": 7, "text": "t"}])

    assert info.value.status_code == 400
    assert "relevance" in str(info.value.body)


def test_citations_resolve_against_what_the_sdk_recorded(client, make_policy):
    make_policy(rules=CONTRACT)

    with pytest.raises(PolicyViolationError) as info, client.run(agent_name="research-agent") as run:
        run.record_retrieval(["fed"], RESULTS)
        decision = run.record_grounding(
            citations=[{"source_id": "fed-2023", "quote": "raised its benchmark rate"}], sources=[{"id": "fed-2023"}]
        )
        assert decision.allowed
        run.record_grounding(citations=[{"source_id": "fed-2023", "quote": "cut its benchmark rate"}])

    assert info.value.decision.reason == 'Citation "fed-2023" quote not found in source'
    failure = info.value.decision.evaluations[0].metadata["citation_failures"][0]
    assert (failure["problem"], failure["source_text"]) == ("quote_not_found", FED_TEXT)


def test_the_async_client_does_the_same(connect, api, make_policy):
    make_policy(rules={**CONTRACT, "context_mode": "chunks_only"})

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            await run.record_retrieval(["fed"], RESULTS, total_results=2, deduplicated_to=2)
            decision = await run.record_grounding(
                citations=[{"source_id": "fed-2023", "quote": "Federal Reserve raised"}]
            )
            assert decision.allowed
            return run, run.decide_grounding("chunks", ["doc"])

    run, context_decision = asyncio.run(main())
    assert (context_decision.retrieved_text_for_prompt, context_decision.include_attachments) == ("chunks", False)
    assert run.last_decision.reason == "Grounding audit passed (1 citations)"
    spans = api.get(f"/api/v1/runs/{run.id}/spans/").json()["results"]
    assert spans[0]["attributes"]["provenance"]["total_results"] == 2
