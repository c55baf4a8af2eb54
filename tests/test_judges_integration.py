"""The LLM judge inside runs: real provider SDKs against the local fake provider server."""

import pytest
from django.test import override_settings
from django_scopes import scope
from fake_llm_server import FakeLLMServer

from governance.models import Evaluation, Run
from judges.models import Judgement
from tenants import services as tenant_services
from tenants.audit import Actor

pytestmark = pytest.mark.django_db

SOURCES = [{"id": "fed-2023", "text": "The Federal Reserve raised interest rates by 0.25 percent in July 2023."}]
GROUNDED = "The Federal Reserve raised interest rates by 0.25 percent in July 2023."
UNGROUNDED = "Bananas are the primary export of Iceland and grow in volcanic greenhouses everywhere."


@pytest.fixture
def llm_server(settings):
    # The fake provider listens on loopback, which the outbound guard refuses unless allowed.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with FakeLLMServer() as server:
        yield server


def judge_rules(**overrides):
    return {
        "min_grounding_score": 0.5,
        "min_citations": 0,
        "action_on_violation": "block",
        "llm_grounding_check": True,
        "llm_grounding_model": "gpt-4o-mini",
        "llm_grounding_threshold": 0.7,
        "llm_grounding_phase": "mid_execution",
        **overrides,
    }


def store_provider_secrets(tenant, server, provider="openai"):
    with scope(tenant=tenant):
        secrets = server.secrets()
        for name, value in secrets.items():
            if name.startswith(provider.upper()):
                tenant_services.secret_set(tenant=tenant, name=name, value=value, actor=Actor.system("tests"))


def report(api, run_id, output, **extra):
    body = {"grounding_scores": [0.9], "citations": ["fed-2023"], "output": output, "sources": SOURCES, **extra}
    response = api.post(f"/api/v1/runs/{run_id}/grounding/", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["decision"]


def start(api, agent="research-agent"):
    return api.post("/api/v1/runs/", {"agent_name": agent}, format="json").json()["id"]


def judge_evaluation(decision):
    return next(e for e in decision["evaluations"] if e.get("source") == "llm_judge")


@pytest.mark.parametrize(
    "provider,model", [("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5"), ("groq", "llama-3.1-8b-instant")]
)
def test_grounded_answer_passes_and_ungrounded_is_blocked_for_each_provider(
    api, acme, make_policy, llm_server, provider, model
):
    store_provider_secrets(acme, llm_server, provider)
    make_policy(rules=judge_rules(llm_grounding_model=model))
    run_id = start(api)

    passed = report(api, run_id, GROUNDED)
    assert passed["action"] == "allow"
    assert judge_evaluation(passed)["reason"] == "LLM judge score (0.9) meets threshold (0.7)"

    blocked = report(api, run_id, UNGROUNDED)
    assert blocked["action"] == "block"
    assert blocked["reason"] == "LLM judge score (0.2) below threshold (0.7)"
    meta = judge_evaluation(blocked)["metadata"]["judge"]
    assert meta["provider"] == provider and meta["model"] == model
    assert meta["input_tokens"] > 0 and meta["output_tokens"] > 0 and meta["latency_ms"] >= 0
    assert len(llm_server.requests_for(provider)) == 2
    assert llm_server.last_request.model == model


def test_no_api_key_skips_the_judge_and_threshold_checks_still_run(api, make_policy, llm_server):
    make_policy(rules=judge_rules())
    run_id = start(api)
    decision = report(api, run_id, UNGROUNDED, grounding_scores=[0.3])
    assert decision["action"] == "block"
    assert decision["reason"] == "Grounding score (0.3) below threshold (0.5)"
    skipped = judge_evaluation(decision)
    assert skipped["action"] == "allow"
    assert skipped["reason"] == "LLM judge skipped: no OPENAI_API_KEY configured"
    assert skipped["metadata"]["judge"]["status"] == "no_api_key"
    assert llm_server.request_count == 0


def test_provider_error_is_a_recorded_warning_never_a_broken_run(api, acme, make_policy, llm_server):
    store_provider_secrets(acme, llm_server)
    llm_server.fail_with(500)
    make_policy(rules=judge_rules())
    run_id = start(api)
    decision = report(api, run_id, UNGROUNDED)
    evaluation = judge_evaluation(decision)
    assert decision["action"] == "allow"
    assert evaluation["reason"] == "LLM judge skipped: provider error"
    assert evaluation["metadata"]["warnings"] == ["LLM judge skipped: provider error"]
    assert evaluation["metadata"]["judge"]["status"] == "error"
    assert llm_server.key_for("openai") not in str(evaluation)


@override_settings(JUDGE_SYNC_BUDGET_SECONDS=0.6)
def test_a_judge_slower_than_the_budget_is_skipped(api, acme, make_policy, llm_server):
    store_provider_secrets(acme, llm_server)
    llm_server.delay_for(3.0)
    make_policy(rules=judge_rules())
    decision = report(api, start(api), UNGROUNDED)
    assert decision["action"] == "allow"
    assert judge_evaluation(decision)["reason"] == "LLM judge skipped: timed out after 0.6s"


def test_unparseable_answer_counts_as_neutral_half(api, acme, make_policy, llm_server):
    store_provider_secrets(acme, llm_server)
    llm_server.reply_with("I think it is quite good overall.")
    make_policy(rules=judge_rules(llm_grounding_threshold=0.6))
    decision = report(api, start(api), GROUNDED)
    assert decision["reason"] == "LLM judge score (0.5) below threshold (0.6)"
    assert judge_evaluation(decision)["metadata"]["judge"]["status"] == "unparseable"


def test_criteria_reach_the_prompt_and_a_replay_is_served_from_the_cache(api, acme, make_policy, llm_server):
    store_provider_secrets(acme, llm_server)
    make_policy(rules=judge_rules(llm_grounding_criteria="Penalise any number not in the sources."))
    run_id = start(api)
    first = report(api, run_id, GROUNDED)
    second = report(api, run_id, GROUNDED)
    assert llm_server.request_count == 1
    assert "Penalise any number not in the sources." in llm_server.last_request.prompt
    assert judge_evaluation(first)["metadata"]["judge"]["cached"] is False
    assert judge_evaluation(second)["metadata"]["judge"]["cached"] is True
    with scope(tenant=acme):
        assert Judgement.objects.count() == 1


def test_after_workflow_judge_runs_in_the_background_and_adds_to_the_run(
    api, acme, make_policy, llm_server, django_capture_on_commit_callbacks
):
    store_provider_secrets(acme, llm_server)
    make_policy(rules=judge_rules(llm_grounding_phase="after_workflow", action_on_violation="warn", min_citations=1))
    run_id = start(api)
    mid = report(api, run_id, UNGROUNDED)
    assert not any(e.get("source") == "llm_judge" for e in mid["evaluations"])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        done = api.post(f"/api/v1/runs/{run_id}/complete/", {"output": UNGROUNDED}, format="json").json()
    assert len(callbacks) == 1
    # The answer came back before the judge; the judgement joined the run when it arrived.
    assert not any(e.get("source") == "llm_judge" for e in done["decision"]["evaluations"])
    with scope(tenant=acme):
        judged = Evaluation.objects.get(run_id=run_id, source="llm_judge")
        assert judged.phase == "after_workflow"
        assert judged.action == "warn"
        assert judged.reason == "LLM judge score (0.2) below threshold (0.7)"
        assert Run.objects.get(pk=run_id).final_action == "warn"
    detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert any(e["source"] == "llm_judge" for e in detail["evaluations"])
    # The late judgement's estimated cost is added to the run (the runs list's "Judge cost").
    assert judged.metadata["judge"]["cost_usd"] > 0
    assert detail["judge_cost"] == pytest.approx(judged.metadata["judge"]["cost_usd"])


def test_warn_only_mid_execution_judge_does_not_hold_up_the_agent(
    api, acme, make_policy, llm_server, django_capture_on_commit_callbacks
):
    store_provider_secrets(acme, llm_server)
    make_policy(rules=judge_rules(action_on_violation="warn"))
    run_id = start(api)
    with django_capture_on_commit_callbacks(execute=True):
        decision = report(api, run_id, UNGROUNDED)
    assert decision["action"] == "allow"
    with scope(tenant=acme):
        assert Evaluation.objects.get(run_id=run_id, source="llm_judge").action == "warn"


def test_disallowed_base_url_host_skips_the_judge(api, acme, make_policy, llm_server, settings):
    store_provider_secrets(acme, llm_server)  # saved while the operator allowed loopback...
    settings.OUTBOUND_ALLOWED_HOSTS = ["gateway.internal.example"]  # ...then took it off the list
    make_policy(rules=judge_rules())
    decision = report(api, start(api), UNGROUNDED)
    assert decision["action"] == "allow"
    assert "OPENAI_BASE_URL refused: 127.0.0.1 is a loopback address" in judge_evaluation(decision)["reason"]
    assert llm_server.request_count == 0
