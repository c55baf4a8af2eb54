"""The async SDK against a live server over real HTTP. pytest-asyncio is not installed, so each
test drives its coroutine with asyncio.run()."""

import asyncio
import logging

import pytest

import groundrule
from groundrule import GroundruleAPIError, PolicyViolationError

pytestmark = pytest.mark.django_db(transaction=True)

ABSTAIN = "I don't have sufficient grounded evidence to answer this accurately."
STRICT = {
    "require_source_grounding": True,
    "min_grounding_score": 0.7,
    "min_citations": 1,
    "max_unsupported_claims": 0,
    "abstention_response": ABSTAIN,
    "action_on_violation": "block",
}


@pytest.fixture
def connect(live_server, acme_key):
    def connect(**options) -> groundrule.AsyncClient:
        return groundrule.AsyncClient(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01, **options)

    return connect


def test_allowed_run(connect, api, make_policy):
    make_policy(rules={"min_grounding_score": 0.6, "min_citations": 1}, agents=["research-agent"])

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            await run.record_tool_call("source_retrieval", output={"found": 3})
            await run.record_llm_call("claude-sonnet-4", prompt="p", response="r", prompt_tokens=5)
            decision = await run.record_grounding(
                grounding_scores=[0.9, 0.85, 0.92],
                citations=["Source A", "Source B", "Source C"],
                unsupported_claims=[],
                output_confidence=0.88,
            )
            assert decision.allowed
            run.set_result({"answer": "..."})
        return run

    run = asyncio.run(main())
    assert [d.action for d in run.decisions] == ["allow", "allow", "allow"]
    assert run.last_decision.reason == "Grounding audit passed (3 citations)"
    detail = api.get(f"/api/v1/runs/{run.id}/?expand=all").json()
    assert detail["status"] == "completed"
    assert detail["result"] == {"answer": "..."}
    assert sorted((s["kind"], s["name"]) for s in detail["spans"]) == [
        ("llm", "claude-sonnet-4"),
        ("tool", "source_retrieval"),
    ]


def test_warn_is_returned_and_logged(connect, make_policy, caplog):
    make_policy(rules={"min_grounding_score": 0.7}, agents=["research-agent"])

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            return await run.record_grounding(grounding_scores=[0.42], citations=["Source A"])

    decision = asyncio.run(main())
    assert decision.warned
    assert decision.reason == "Grounding score (0.42) below threshold (0.7)"
    assert any(
        r.name == "groundrule" and r.levelno == logging.WARNING and decision.reason in r.getMessage()
        for r in caplog.records
    )


def test_block_at_mid_execution_raises(connect, api, make_policy):
    make_policy(rules=STRICT, agents=["research-agent"])
    runs = []

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            runs.append(run)
            await run.record_grounding(grounding_scores=[0.9, 0.42], citations=["Source A"])
            pytest.fail("a block must stop the workflow")

    with pytest.raises(PolicyViolationError) as caught:
        asyncio.run(main())
    assert str(caught.value) == "Grounding score (0.42) below threshold (0.7)"
    assert caught.value.phase == "mid_execution"
    detail = api.get(f"/api/v1/runs/{runs[0].id}/?expand=all").json()
    assert detail["status"] == "blocked"
    assert [e["phase"] for e in detail["evaluations"]].count("after_workflow") == 1


def test_block_at_after_workflow_on_exit(connect, make_policy):
    make_policy(
        rules={
            "require_source_grounding": True,
            "min_citations": 1,
            "abstention_response": ABSTAIN,
            "action_on_violation": "block",
        },
        agents=["research-agent"],
    )

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            run.set_result({"answer": "A guess"})

    with pytest.raises(PolicyViolationError) as caught:
        asyncio.run(main())
    assert str(caught.value) == "Citations (0) below minimum (1); No source citations provided (grounding required)"
    assert caught.value.phase == "after_workflow"
    assert caught.value.abstention_response == ABSTAIN


def test_enforce_policy_false_never_raises(connect, make_policy):
    make_policy(rules=STRICT, agents=["research-agent"])

    async def main():
        async with connect() as client, client.run(agent_name="research-agent", enforce_policy=False) as run:
            await run.record_grounding(grounding_scores=[0.42])
        return run

    run = asyncio.run(main())
    assert [d.action for d in run.decisions] == ["allow", "block", "block"]


def test_grounding_accumulates_over_two_calls(connect, make_policy):
    make_policy(rules={"min_citations": 4, "action_on_violation": "block"}, agents=["research-agent"])

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            await run.record_grounding(
                grounding_scores=[0.92, 0.87],
                citations=["Federal Reserve Report", "IMF Analysis"],
                output_confidence=0.89,
            )
            await run.record_grounding(
                grounding_scores=[0.85, 0.91], citations=["SEC Filing 2023", "Legal Review"], output_confidence=0.88
            )
        return run

    run = asyncio.run(main())
    assert run.last_decision.reason == "Grounding audit passed (4 citations)"


def test_exception_inside_the_block_fails_the_run(connect, api):
    runs = []

    async def main():
        async with connect() as client, client.run(agent_name="research-agent") as run:
            runs.append(run)
            raise ValueError("bad retrieval")

    with pytest.raises(ValueError, match="bad retrieval"):
        asyncio.run(main())
    detail = api.get(f"/api/v1/runs/{runs[0].id}/?expand=all").json()
    assert detail["status"] == "failed"
    assert detail["error"] == "ValueError: bad retrieval"


def test_bad_key_raises_api_error(live_server, acme):
    async def main():
        async with groundrule.AsyncClient(base_url=live_server.url, api_key="gr_not_a_key") as client:
            async with client.run(agent_name="research-agent"):
                pass

    with pytest.raises(GroundruleAPIError) as caught:
        asyncio.run(main())
    assert caught.value.status_code == 401
