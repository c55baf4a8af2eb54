"""The score audit: sampled reports re-scored by the local verifier, inflation per agent, the rule."""

import pytest
from django_scopes import scope, scopes_disabled

from governance import score_audit
from governance.models import AgentScoreAuditDay, GroundingReport, ScoreAudit
from governance.tasks import audit_report_scores
from policies.categories import get_category
from policies.categories.base import RunState
from tests.api_support import post_json

pytestmark = pytest.mark.django_db

SOURCES = [
    {"id": "pricing", "text": "Premium users get 1,000 requests per minute. Free users get 100 requests per minute."},
    {"id": "support", "text": "Support tickets are answered within 24 hours on weekdays."},
]
HONEST = "Premium users get 1,000 requests per minute. Support tickets are answered within 24 hours on weekdays."
INFLATED = "Premium users get 5,000 requests per minute. Free users get 900 requests per minute."
INFLATION_RULES = {
    "min_grounding_score": 0.5,
    "max_score_inflation": 0.3,
    "score_audit_min_samples": 3,
    "action_on_violation": "block",
}


def _start(api, agent="research-agent") -> int:
    response = post_json(api, "/api/v1/runs/", {"agent_name": agent})
    assert response.status_code == 201
    return response.json()["id"]


def _report(api, run_id, *, output, scores=(0.95, 0.95), sources=SOURCES, capture=None):
    body = {"grounding_scores": list(scores), "citations": ["pricing"], "output": output, "sources": sources}
    with capture(execute=True):
        response = post_json(api, f"/api/v1/runs/{run_id}/grounding/", body)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def audit_everything(api):
    assert api.put("/api/v1/settings/score-audit/", {"rate": 1.0}, format="json").status_code == 200


# --- the rule, pure ---------------------------------------------------------------------------


def _mid(rules: dict, **state):
    category = get_category("grounding")
    return category.check("mid_execution")(category.effective_rules(rules), RunState(**state))


def test_inflation_above_the_limit_is_a_violation_with_its_reason():
    action, reason, metadata, _ = _mid(
        INFLATION_RULES, grounding_scores=(0.9,), score_inflation=0.3149, score_audit_samples=25
    )
    assert action == "block"
    assert reason == "Reported scores exceed measured support by 0.31 (agent average over 7 days)"
    assert metadata["score_audit"] == {"inflation": 0.31, "max_score_inflation": 0.3, "samples": 25}
    assert metadata["warnings"] == [reason]


def test_inflation_needs_enough_samples_and_a_limit():
    few = _mid(INFLATION_RULES, grounding_scores=(0.9,), score_inflation=0.9, score_audit_samples=2)
    assert few[0] == "allow" and few[1] == "Grounding scores passed (1 checked)"
    unset = _mid(
        {**INFLATION_RULES, "max_score_inflation": None},
        grounding_scores=(0.9,),
        score_inflation=0.9,
        score_audit_samples=50,
    )
    assert unset[0] == "allow"
    within = _mid(INFLATION_RULES, grounding_scores=(0.9,), score_inflation=0.3, score_audit_samples=50)
    assert within[0] == "allow"


def test_a_failing_score_comes_first_and_inflation_follows():
    action, reason, _, _ = _mid(INFLATION_RULES, grounding_scores=(0.2,), score_inflation=0.5, score_audit_samples=9)
    assert action == "block"
    assert reason == (
        "Grounding score (0.2) below threshold (0.5); "
        "Reported scores exceed measured support by 0.5 (agent average over 7 days)"
    )


# --- end to end over the API ---------------------------------------------------------------------


def test_an_agent_that_inflates_its_scores_is_flagged_then_blocked(
    api, acme, make_policy, audit_everything, django_capture_on_commit_callbacks
):
    make_policy(rules=INFLATION_RULES)
    run_id = _start(api)
    decisions = [
        _report(api, run_id, output=INFLATED, capture=django_capture_on_commit_callbacks)["decision"] for _ in range(4)
    ]
    # The first three build the sample; the audit of each lands after its answer.
    assert [d["action"] for d in decisions[:3]] == ["allow", "allow", "allow"]
    assert decisions[3]["action"] == "block"
    assert decisions[3]["reason"].startswith("Reported scores exceed measured support by 0.")
    assert decisions[3]["reason"].endswith("(agent average over 7 days)")
    with scope(tenant=acme):
        audits = list(ScoreAudit.objects.order_by("id"))
        assert len(audits) == 4 and {a.status for a in audits} == {"audited"}
        # measured = the verifier's calibrated P(supported) of the two contradicted claims: 0.17 with
        # the first adapted cross-encoder, 0.24 with the second (a number mismatch the combiner has
        # seen on pairs that were supported after all keeps some weight); far under the 0.95 reported
        assert all(a.reported == 0.95 and a.measured < 0.3 for a in audits)
        assert [p["source_id"] for p in audits[0].per_source] == ["pricing", "support"]
        assert audits[0].claims and audits[0].claims[0]["verdict"] == "contradicted"


def test_an_honest_agent_is_not_flagged(api, acme, make_policy, audit_everything, django_capture_on_commit_callbacks):
    make_policy(rules=INFLATION_RULES)
    run_id = _start(api)
    decisions = [
        _report(api, run_id, output=HONEST, scores=(0.9, 0.9), capture=django_capture_on_commit_callbacks)
        for _ in range(5)
    ]
    assert {d["decision"]["action"] for d in decisions} == {"allow"}
    summary = api.get("/api/v1/agents/research-agent/score-audit/").json()
    assert summary["audited_reports"] == 5
    assert summary["inflation"] is not None and abs(summary["inflation"]) <= 0.3


def test_rate_zero_audits_nothing(api, acme, make_policy, django_capture_on_commit_callbacks):
    assert api.put("/api/v1/settings/score-audit/", {"rate": 0.0}, format="json").status_code == 200
    make_policy(rules=INFLATION_RULES)
    run_id = _start(api)
    for _ in range(5):
        _report(api, run_id, output=INFLATED, capture=django_capture_on_commit_callbacks)
    with scopes_disabled():
        assert ScoreAudit.objects.count() == 0 and AgentScoreAuditDay.objects.count() == 0


def test_a_policy_rate_overrides_the_tenants(api, acme, make_policy, django_capture_on_commit_callbacks):
    assert api.put("/api/v1/settings/score-audit/", {"rate": 0.0}, format="json").status_code == 200
    make_policy(rules={"score_audit_rate": 1.0})
    run_id = _start(api)
    _report(api, run_id, output=HONEST, capture=django_capture_on_commit_callbacks)
    with scopes_disabled():
        assert ScoreAudit.objects.count() == 1


def test_a_report_without_output_or_sources_is_not_auditable_never_guessed(
    api, acme, make_policy, audit_everything, django_capture_on_commit_callbacks
):
    run_id = _start(api)
    _report(api, run_id, output="", capture=django_capture_on_commit_callbacks)
    _report(api, run_id, output=HONEST, sources=[], capture=django_capture_on_commit_callbacks)
    summary = api.get("/api/v1/agents/research-agent/score-audit/").json()
    assert (summary["audited_reports"], summary["not_auditable"]) == (0, 2)
    assert summary["reported_mean"] is None and summary["inflation"] is None
    with scope(tenant=acme):
        assert {a.status for a in ScoreAudit.objects.all()} == {"not_auditable"}
        assert all(a.measured is None for a in ScoreAudit.objects.all())


def test_the_audit_task_is_idempotent(api, acme, audit_everything, django_capture_on_commit_callbacks):
    run_id = _start(api)
    _report(api, run_id, output=INFLATED, capture=django_capture_on_commit_callbacks)
    with scope(tenant=acme):
        audit = ScoreAudit.objects.get()
        day = AgentScoreAuditDay.objects.get()
    # A redelivery (acks_late after a worker died, or a retry) finds the audit and writes nothing.
    assert score_audit.report_audit(report_id=audit.report_id) == "duplicate"
    with scope(tenant=acme):
        assert ScoreAudit.objects.count() == 1
        again = AgentScoreAuditDay.objects.get()
        assert (again.audited, again.sum_reported) == (day.audited, day.sum_reported) == (1, 0.95)


def test_the_celery_task_delivered_twice_stores_one_audit(api, acme, django_capture_on_commit_callbacks):
    assert api.put("/api/v1/settings/score-audit/", {"rate": 0.0}, format="json").status_code == 200
    run_id = _start(api)
    _report(api, run_id, output=INFLATED, capture=django_capture_on_commit_callbacks)
    with scope(tenant=acme):
        report_id = GroundingReport.objects.get().pk
    first = audit_report_scores.apply(kwargs={"report_id": report_id})
    second = audit_report_scores.apply(kwargs={"report_id": report_id})
    assert (first.get(), second.get()) == ("audited", "duplicate")
    with scopes_disabled():
        assert ScoreAudit.objects.count() == 1 and AgentScoreAuditDay.objects.get().audited == 1


def test_crossing_the_limit_sends_one_score_audit_alert_webhook(
    api, acme, make_policy, audit_everything, django_capture_on_commit_callbacks, settings
):
    from tenants.audit import Actor
    from webhooks.models import WebhookDelivery
    from webhooks.services import webhook_create

    # A loopback receiver that is not listening: the delivery is queued and fails, loopback only.
    settings.WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    with scope(tenant=acme):
        webhook_create(
            tenant=acme, url="http://127.0.0.1:9/groundrule", events=["score_audit.alert"], actor=Actor.system("tests")
        )
    make_policy(rules=INFLATION_RULES)
    run_id = _start(api)
    for _ in range(5):
        _report(api, run_id, output=INFLATED, capture=django_capture_on_commit_callbacks)
    with scopes_disabled():
        alerts = list(WebhookDelivery.objects.filter(event="score_audit.alert"))
    # The third audit reaches score_audit_min_samples (3) over the limit; later ones stay over it.
    assert len(alerts) == 1
    data = alerts[0].payload["data"]
    assert data["agent_name"] == "research-agent" and data["samples"] == 3 and data["inflation"] > 0.3


# --- the decision path's reuse of the 7-day inflation ---------------------------------------------


@pytest.fixture
def inflation_reused(settings):
    settings.SCORE_AUDIT_INFLATION_CACHE_SECONDS = 60
    score_audit.forget_agent_inflation()
    yield
    score_audit.forget_agent_inflation()


def test_the_decision_path_reuses_the_agents_inflation_until_an_audit_moves_it(acme, inflation_reused):
    with scope(tenant=acme):
        first = score_audit.agent_inflation_for_decision(tenant_id=acme.pk, agent_name="research-agent")
        assert first == (None, 0)
        AgentScoreAuditDay.objects.create(
            tenant=acme,
            agent_name="research-agent",
            date=score_audit.timezone.now().date(),
            audited=5,
            sum_reported=4.5,
            sum_measured=1.0,
        )
        # Written behind the process's back (another process's audit): reused until it ages out.
        assert score_audit.agent_inflation_for_decision(tenant_id=acme.pk, agent_name="research-agent") == (None, 0)
        score_audit.forget_agent_inflation(tenant_id=acme.pk, agent_name="research-agent")
        assert score_audit.agent_inflation_for_decision(tenant_id=acme.pk, agent_name="research-agent") == (0.7, 5)


def test_with_reuse_on_an_inflating_agent_is_still_blocked_once_its_audits_land(
    api, acme, make_policy, audit_everything, django_capture_on_commit_callbacks, inflation_reused
):
    make_policy(rules=INFLATION_RULES)
    run_id = _start(api)
    decisions = [
        _report(api, run_id, output=INFLATED, capture=django_capture_on_commit_callbacks)["decision"] for _ in range(4)
    ]
    assert [d["action"] for d in decisions] == ["allow", "allow", "allow", "block"]
