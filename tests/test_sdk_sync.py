"""The sync SDK against a live server over real HTTP: allow, warn, block at each phase, accumulation,
failed runs, bad input and configuration; the examples of docs/sdk.md."""

import datetime as dt
import logging

import pytest

import groundrule
from groundrule import GroundruleAPIError, PolicyViolationError

pytestmark = pytest.mark.django_db(transaction=True)

ABSTAIN = "I don't have sufficient grounded evidence to answer this accurately."
LENIENT = {
    "require_source_grounding": False,
    "min_grounding_score": 0.6,
    "min_citations": 1,
    "max_unsupported_claims": 3,
    "abstention_threshold": None,
    "action_on_violation": "warn",
}
STRICT = {
    "require_source_grounding": True,
    "min_grounding_score": 0.7,
    "min_citations": 1,
    "max_unsupported_claims": 0,
    "abstention_response": ABSTAIN,
    "action_on_violation": "block",
}


@pytest.fixture
def client(live_server, acme_key):
    with groundrule.Client(base_url=live_server.url, api_key=acme_key[1], backoff_base=0.01) as client:
        yield client


def run_detail(api, run_id) -> dict:
    response = api.get(f"/api/v1/runs/{run_id}/?expand=all")
    assert response.status_code == 200
    return response.json()


def groundrule_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "groundrule" and r.levelno == logging.WARNING]


def test_allowed_run_reports_grounding_spans_and_result(client, api, make_policy):
    make_policy(name="Lenient RAG Agent", rules=LENIENT, agents=["research-*"])

    with client.run(agent_name="research-agent", workflow_name="answer", input={"q": "2008 crisis"}) as run:
        started = dt.datetime.now(dt.UTC)
        run.record_tool_call(
            "source_retrieval",
            input={"q": "2008 crisis"},
            output={"found": 3},
            started_at=started,
            ended_at=started + dt.timedelta(milliseconds=40),
        )
        run.record_llm_call(
            "gpt-4o-mini", prompt="Summarise", response="The crisis...", prompt_tokens=120, completion_tokens=40
        )
        decision = run.record_grounding(
            grounding_scores=[0.9, 0.85, 0.92],
            citations=["Source A", "Source B", "Source C"],
            unsupported_claims=[],
            output_confidence=0.88,
            sources=[{"id": "Source A", "text": "Banks failed in 2008.", "score": 0.9}],
        )
        assert decision.action == "allow"
        assert decision.phase == "mid_execution"
        run.set_result({"answer": "The crisis...", "citations": ["Source A"]}, output="The crisis...")

    assert [d.phase for d in run.decisions] == ["before_workflow", "mid_execution", "after_workflow"]
    assert all(d.allowed for d in run.decisions)
    assert run.last_decision.reason == "Grounding audit passed (3 citations)"
    assert run.last_decision.evaluations[0].metadata == {"citation_count": 3}
    assert run.status == "completed"
    detail = run_detail(api, run.id)
    assert detail["status"] == "completed"
    assert detail["workflow_name"] == "answer"
    assert detail["result"] == {"answer": "The crisis...", "citations": ["Source A"]}
    assert detail["output"] == "The crisis..."
    spans = {span["kind"]: span for span in detail["spans"]}
    assert spans["tool"]["name"] == "source_retrieval"
    assert spans["tool"]["output"] == {"found": 3}
    assert dt.datetime.fromisoformat(spans["tool"]["started_at"]) == started
    assert detail["reports"][0]["sources"] == [{"id": "Source A", "text": "Banks failed in 2008.", "score": 0.9}]
    assert spans["llm"]["name"] == "gpt-4o-mini"
    assert spans["llm"]["attributes"] == {
        "model": "gpt-4o-mini",
        "prompt_tokens": 120,
        "completion_tokens": 40,
        "total_tokens": 160,
    }


def test_warn_decision_is_returned_and_logged(client, make_policy, caplog):
    make_policy(name="Calibrating", rules={"min_grounding_score": 0.7}, agents=["research-agent"])

    with client.run(agent_name="research-agent") as run:
        decision = run.record_grounding(grounding_scores=[0.9, 0.42], citations=["Source A"], unsupported_claims=[])

    assert decision.action == "warn"
    assert decision.reason == "Grounding score (0.42) below threshold (0.7)"
    assert any("Grounding score (0.42) below threshold (0.7)" in m for m in groundrule_warnings(caplog))
    assert run.status == "completed"


def test_a_shadow_policy_is_reported_apart_and_never_blocks(client, make_policy):
    make_policy(name="Candidate", rules=STRICT, agents=["research-agent"], mode="shadow")

    with client.run(agent_name="research-agent") as run:
        decision = run.record_grounding(grounding_scores=[0.9, 0.42], citations=["Source A"], unsupported_claims=[])

    assert decision.action == "allow" and decision.evaluations == ()
    [shadow] = decision.shadow_evaluations
    assert (shadow.policy_name, shadow.action, shadow.shadow) == ("Candidate", "block", True)
    assert shadow.reason == "Grounding score (0.42) below threshold (0.7)"
    assert run.status == "completed"


def test_block_at_mid_execution_raises_the_seed_reason(client, api, make_policy):
    make_policy(rules=STRICT, agents=["research-agent"])

    with pytest.raises(PolicyViolationError) as caught:
        with client.run(agent_name="research-agent") as run:
            run.record_grounding(grounding_scores=[0.9, 0.42], citations=["Source A"], unsupported_claims=[])
            pytest.fail("a block must stop the workflow")

    error = caught.value
    assert str(error) == "Grounding score (0.42) below threshold (0.7)"
    assert error.phase == "mid_execution"
    assert error.run_id == run.id
    assert error.decision.evaluations[0].metadata == {"score": 0.42, "threshold": 0.7}
    # The run is still completed exactly once, as a block, not as a crash.
    detail = run_detail(api, run.id)
    assert detail["status"] == "blocked"
    assert detail["error"] == ""
    assert detail["ended_at"] is not None
    assert [e["phase"] for e in detail["evaluations"]].count("after_workflow") == 1


def test_block_at_after_workflow_raises_on_exit_with_abstention_response(client, make_policy):
    make_policy(
        rules={
            "require_source_grounding": True,
            "min_citations": 1,
            "abstention_response": ABSTAIN,
            "action_on_violation": "block",
        },
        agents=["research-agent"],
    )

    with pytest.raises(PolicyViolationError) as caught:
        with client.run(agent_name="research-agent") as run:
            run.set_result({"answer": "A guess"})

    error = caught.value
    assert str(error) == "Citations (0) below minimum (1); No source citations provided (grounding required)"
    assert error.reason == str(error)
    assert error.phase == "after_workflow"
    assert error.abstention_response == ABSTAIN
    assert error.decision.evaluations[0].metadata["citation_count"] == 0
    assert run.status == "blocked"


def test_handling_violations_returns_the_abstention_message(client, make_policy):
    """docs/sdk.md "Handling violations", as an agent would write it."""
    make_policy(rules=STRICT, agents=["research-agent"])

    def answer(query: str) -> str:
        try:
            with client.run(agent_name="research-agent", input={"query": query}) as run:
                run.record_grounding(
                    grounding_scores=[0.95], citations=[], unsupported_claims=[], output_confidence=0.88
                )
                run.set_result({"answer": "Rates rose."})
        except PolicyViolationError as e:
            return e.abstention_response or "blocked"
        return "Rates rose."

    assert answer("What happened in 2008?") == ABSTAIN


def test_enforce_policy_false_never_raises(client, make_policy, caplog):
    make_policy(rules=STRICT, agents=["research-agent"])

    with client.run(agent_name="research-agent", enforce_policy=False) as run:
        decision = run.record_grounding(grounding_scores=[0.42], citations=[], unsupported_claims=["x"])
        assert decision.blocked

    assert [d.action for d in run.decisions] == ["allow", "block", "block"]
    assert run.last_decision.reason == (
        "Citations (0) below minimum (1); No source citations provided "
        "(grounding required); Unsupported claims (1) exceeds max (0)"
    )
    assert len([m for m in groundrule_warnings(caplog) if "not enforced" in m]) == 2


def test_grounding_accumulates_over_two_calls(client, make_policy):
    """Accumulation (docs/grounding-policies.md#accumulation-across-reports): after_workflow counts the
    citations of both steps."""
    make_policy(rules={"min_citations": 4, "action_on_violation": "block"}, agents=["research-agent"])

    with client.run(agent_name="research-agent") as run:
        first = run.record_grounding(
            grounding_scores=[0.92, 0.87], citations=["Federal Reserve Report", "IMF Analysis"], output_confidence=0.89
        )
        second = run.record_grounding(
            grounding_scores=[0.85, 0.91], citations=["SEC Filing 2023", "Legal Review"], output_confidence=0.88
        )

    assert first.allowed and second.allowed
    assert run.last_decision.phase == "after_workflow"
    assert run.last_decision.reason == "Grounding audit passed (4 citations)"


def test_exception_inside_the_block_fails_the_run_and_is_reraised(client, api, make_policy):
    make_policy(rules=STRICT, agents=["research-agent"])

    with pytest.raises(RuntimeError, match="retriever crashed"):
        with client.run(agent_name="research-agent") as run:
            raise RuntimeError("retriever crashed")

    detail = run_detail(api, run.id)
    assert detail["status"] == "failed"
    assert detail["error"] == "RuntimeError: retriever crashed"
    assert run.last_decision.reason == "Run failed; after_workflow audit skipped"


def test_bad_input_raises_api_error_naming_the_field(client, api):
    with pytest.raises(GroundruleAPIError) as caught:
        with client.run(agent_name="research-agent") as run:
            run.record_grounding(grounding_scores=[1.5])

    assert caught.value.status_code == 400
    assert "grounding_scores" in caught.value.body
    # Bad input is a programming error inside the block: the run is recorded as failed.
    assert run_detail(api, run.id)["status"] == "failed"


def test_bad_key_raises_api_error_even_when_failing_open(live_server, acme):
    with groundrule.Client(base_url=live_server.url, api_key="gr_not_a_key", fail_open=True) as client:
        with pytest.raises(GroundruleAPIError) as caught:
            with client.run(agent_name="research-agent"):
                pytest.fail("a 401 must not be swallowed")
    assert caught.value.status_code == 401
    # The body names the request as the header does, so the SDK's error carries both.
    assert caught.value.body == {"detail": "Invalid or revoked API key.", "request_id": caught.value.request_id}
    assert caught.value.request_id


def test_configuration_from_environment(live_server, acme_key, monkeypatch):
    monkeypatch.setenv("GROUNDRULE_URL", live_server.url + "/api/v1/")
    monkeypatch.setenv("GROUNDRULE_API_KEY", acme_key[1])

    with groundrule.Client() as client, client.run(agent_name="research-agent") as run:
        pass

    assert run.id is not None
    assert run.status == "completed"
