"""The LLM auditor of the score audit: sampled reports measured by the tenant's LLM judge (the fake
provider on loopback), its cost kept and shown, and its figures never mixed with the local verifier's."""

import time

import pytest
from django.conf import settings
from django_scopes import scope, scopes_disabled
from fake_llm_server import FakeLLMServer
from pages_support import signed_in
from test_judges_integration import store_provider_secrets
from worker_support import NEEDS_BROKER, celery_worker

from governance.models import AgentScoreAuditDay, ScoreAudit
from tenants.models import AuditEvent
from tests.api_support import post_json
from tests.test_score_audit import INFLATED, SOURCES

pytestmark = pytest.mark.django_db


@pytest.fixture
def llm_server(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with FakeLLMServer() as server:
        server.reply_with("SCORE: 0.35")
        yield server


def _report(api, *, capture, agent="research-agent", output=INFLATED):
    run_id = post_json(api, "/api/v1/runs/", {"agent_name": agent}).json()["id"]
    body = {"grounding_scores": [0.95, 0.95], "citations": ["pricing"], "output": output, "sources": SOURCES}
    with capture(execute=True):  # the outbox row is relayed on commit and the audit task runs
        response = post_json(api, f"/api/v1/runs/{run_id}/grounding/", body)
    assert response.status_code == 200, response.content


def _settings(api, **body):
    response = api.put("/api/v1/settings/score-audit/", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_the_llm_auditor_measures_a_sampled_report_and_keeps_its_cost(
    api, acme, llm_server, django_capture_on_commit_callbacks
):
    store_provider_secrets(acme, llm_server)
    assert _settings(api, rate=1.0, auditor="llm") == {"rate": 1.0, "auditor": "llm", "model": "gpt-4o-mini"}
    _report(api, capture=django_capture_on_commit_callbacks)
    with scope(tenant=acme):
        audit = ScoreAudit.objects.get()
        day = AgentScoreAuditDay.objects.get()
    assert (audit.status, audit.auditor, audit.auditor_model) == ("audited", "llm", "gpt-4o-mini")
    assert (audit.reported, audit.measured) == (0.95, 0.35)
    assert audit.cost_usd > 0 and day.cost_usd == pytest.approx(audit.cost_usd)
    assert audit.claims == [] and [p["measured"] for p in audit.per_source] == [None, None]
    assert llm_server.request_count == 1

    [agent] = api.get("/api/v1/score-audit/").json()["agents"]
    assert (agent["auditor"], agent["audited_reports"], agent["inflation"]) == ("llm", 1, 0.6)
    assert agent["cost_usd"] == pytest.approx(audit.cost_usd, abs=1e-6)
    body = api.get("/api/v1/agents/research-agent/score-audit/?auditor=llm").json()
    assert (body["auditor"], body["measured_mean"]) == ("llm", 0.35)


def test_the_two_auditors_figures_are_never_mixed(api, acme, alice, llm_server, django_capture_on_commit_callbacks):
    store_provider_secrets(acme, llm_server)
    _settings(api, rate=1.0)
    _report(api, capture=django_capture_on_commit_callbacks)  # the local verifier
    _settings(api, auditor="llm")
    _report(api, capture=django_capture_on_commit_callbacks)  # the LLM judge
    with scope(tenant=acme):
        assert sorted(ScoreAudit.objects.values_list("auditor", flat=True)) == ["llm", "local"]
        assert sorted(AgentScoreAuditDay.objects.values_list("auditor", "audited")) == [("llm", 1), ("local", 1)]
    rows = {a["auditor"]: a for a in api.get("/api/v1/score-audit/").json()["agents"]}
    assert set(rows) == {"local", "llm"}
    assert rows["llm"]["measured_mean"] == 0.35 and rows["local"]["measured_mean"] != 0.35
    assert rows["local"]["cost_usd"] == 0.0 and rows["llm"]["cost_usd"] > 0
    local = api.get("/api/v1/agents/research-agent/score-audit/").json()
    assert local["auditor"] == "local" and local["audited_reports"] == 1

    html = signed_in(alice).get("/score-audit/").content.decode()
    assert "<td>LLM judge</td>" in html and "<td>Local verifier</td>" in html


def test_a_policys_auditor_overrides_the_tenants_with_its_llm_judge_model(
    api, acme, make_policy, llm_server, django_capture_on_commit_callbacks
):
    store_provider_secrets(acme, llm_server, "anthropic")
    _settings(api, rate=1.0)  # the tenant's auditor stays local
    make_policy(rules={"score_audit_auditor": "llm", "llm_grounding_model": "claude-haiku-4-5"})
    _report(api, capture=django_capture_on_commit_callbacks)
    with scope(tenant=acme):
        audit = ScoreAudit.objects.get()
    assert (audit.auditor, audit.auditor_model, audit.measured) == ("llm", "claude-haiku-4-5", 0.35)
    [request] = llm_server.requests_for("anthropic")
    assert request.model == "claude-haiku-4-5"


def test_the_inflation_rule_reads_the_figures_of_the_auditor_in_effect(
    api, acme, make_policy, llm_server, django_capture_on_commit_callbacks
):
    store_provider_secrets(acme, llm_server)
    _settings(api, rate=1.0, auditor="llm")
    make_policy(
        rules={
            "min_grounding_score": 0.5,
            "max_score_inflation": 0.3,
            "score_audit_min_samples": 2,
            "action_on_violation": "block",
        }
    )
    for _ in range(2):
        _report(api, capture=django_capture_on_commit_callbacks)
    run_id = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()["id"]
    body = {"grounding_scores": [0.95], "output": INFLATED, "sources": SOURCES}
    decision = post_json(api, f"/api/v1/runs/{run_id}/grounding/", body).json()["decision"]
    assert decision["action"] == "block"
    assert "0.6" in decision["reason"]
    # the local verifier never measured this agent: under it, nothing to flag
    _settings(api, auditor="local")
    run_id = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()["id"]
    body = {"grounding_scores": [0.95], "output": INFLATED, "sources": SOURCES}
    assert post_json(api, f"/api/v1/runs/{run_id}/grounding/", body).json()["decision"]["action"] == "allow"


@pytest.mark.parametrize(
    "breaks,note",
    [
        (lambda server: server.fail_with(500), "LLM auditor: provider error"),
        (lambda server: server.reply_with("I cannot tell."), "LLM auditor: the LLM judge's answer held no score"),
    ],
    ids=["http-500", "no-score"],
)
def test_a_failing_llm_auditor_leaves_the_report_not_auditable_and_says_why(
    api, acme, llm_server, django_capture_on_commit_callbacks, breaks, note
):
    store_provider_secrets(acme, llm_server)
    _settings(api, rate=1.0, auditor="llm")
    breaks(llm_server)
    _report(api, capture=django_capture_on_commit_callbacks)
    with scope(tenant=acme):
        audit = ScoreAudit.objects.get()
        day = AgentScoreAuditDay.objects.get()
    assert (audit.status, audit.auditor, audit.note, audit.measured) == ("not_auditable", "llm", note, None)
    assert (day.auditor, day.audited, day.not_auditable) == ("llm", 0, 1)


def test_without_a_key_the_llm_auditor_measures_nothing_and_says_so(api, acme, django_capture_on_commit_callbacks):
    _settings(api, rate=1.0, auditor="llm")
    _report(api, capture=django_capture_on_commit_callbacks)
    with scope(tenant=acme):
        audit = ScoreAudit.objects.get()
    assert (audit.status, audit.note) == ("not_auditable", "LLM auditor: no OPENAI_API_KEY configured")


@pytest.mark.parametrize(
    "body,field,message",
    [
        ({"auditor": "gpt"}, "auditor", '"gpt" is not a valid choice.'),
        ({"model": "bert-base"}, "model", "Must be a model name starting with gpt-, claude-, llama-, mixtral-."),
        ({}, "rate", "Give rate, auditor or model."),
    ],
)
def test_bad_auditor_settings_are_a_400_naming_the_field(api, acme, body, field, message):
    response = api.put("/api/v1/settings/score-audit/", body, format="json")
    assert response.status_code == 400
    assert response.json()[field] == [message]
    acme.refresh_from_db()
    assert (acme.score_audit_auditor, acme.score_audit_model) == ("local", "gpt-4o-mini")


def test_an_auditor_change_is_audited_and_per_tenant(api, other_api, acme, globex):
    _settings(api, auditor="llm", model="claude-haiku-4-5")
    with scope(tenant=acme):
        event = AuditEvent.objects.get(action="tenants.tenant.score_audit_auditor_changed")
    assert event.before == {"score_audit_auditor": "local", "score_audit_model": "gpt-4o-mini"}
    assert event.after == {"score_audit_auditor": "llm", "score_audit_model": "claude-haiku-4-5"}
    assert other_api.get("/api/v1/settings/score-audit/").json()["auditor"] == "local"


def test_an_unknown_auditor_in_the_query_is_a_400_naming_it(api):
    post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"})
    response = api.get("/api/v1/agents/research-agent/score-audit/?auditor=both")
    assert response.status_code == 400 and response.json()["auditor"] == ['Must be "local" or "llm".']


def test_the_settings_page_sets_the_auditor_and_shows_a_bad_model_beside_its_field(acme, alice):
    client = signed_in(alice)
    bad = client.post("/settings/score-audit/", {"score_audit_auditor": "llm", "score_audit_model": "bert"})
    assert bad.status_code == 400
    assert "Must be a model name starting with gpt-, claude-, llama-, mixtral-." in bad.content.decode()
    ok = client.post("/settings/score-audit/", {"score_audit_auditor": "llm", "score_audit_model": "gpt-4o"})
    assert ok.status_code == 302
    acme.refresh_from_db()
    assert (acme.score_audit_auditor, acme.score_audit_model) == ("llm", "gpt-4o")


# --- a real worker and broker ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@NEEDS_BROKER[0]
@NEEDS_BROKER[1]
def test_a_real_worker_measures_the_sampled_report_with_the_llm_auditor(api, acme):
    allowed = settings.OUTBOUND_ALLOWED_HOSTS
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    try:
        with FakeLLMServer() as server, celery_worker(OUTBOUND_ALLOWED_HOSTS="127.0.0.1") as worker:
            server.reply_with("SCORE: 0.35")
            store_provider_secrets(acme, server)
            _settings(api, rate=1.0, auditor="llm")
            run_id = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()["id"]
            body = {"grounding_scores": [0.95], "output": INFLATED, "sources": SOURCES}
            assert post_json(api, f"/api/v1/runs/{run_id}/grounding/", body).status_code == 200
            deadline, audit = time.monotonic() + 90, None
            while time.monotonic() < deadline and audit is None:
                with scopes_disabled():
                    audit = ScoreAudit.objects.filter(run_id=run_id).first()
                if audit is None:
                    assert worker.poll() is None, worker.stdout.read()
                    time.sleep(0.25)
            assert audit is not None, "the worker never stored the audit"
            assert (audit.auditor, audit.measured, audit.status) == ("llm", 0.35, "audited")
            assert audit.cost_usd > 0 and server.request_count == 1
    finally:
        settings.OUTBOUND_ALLOWED_HOSTS = allowed
