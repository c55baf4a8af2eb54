"""The grounding call's two write paths store the same rows.

On PostgreSQL a report is an unlocked read and one conditional write statement
(governance/rows.py); everywhere else, and whenever that write finds the run changed, it is the
locked read-decide-write in a transaction. These tests hold the first to the second.
"""

import pytest
from django.db import connection
from django.forms.models import model_to_dict
from django_scopes import scope, scopes_disabled

from governance import rows, services
from governance.models import Decision, Evaluation, GroundingReport, Run

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement write is PostgreSQL's"),
]

REPORTS = [
    {
        "grounding_scores": [0.9, 0.8],
        "citations": ["fed", {"source_id": "imf", "quote": "growth slowed"}],
        "unsupported_claims": ["rates fall"],
        "output_confidence": 0.7,
        "output": "first answer",
        "sources": [{"id": "imf", "text": "Growth slowed in 2024.", "score": 0.5}],
    },
    {"grounding_scores": [0.3], "citations": [], "unsupported_claims": [], "output_confidence": None, "output": ""},
    {
        "grounding_scores": [0.95],
        "citations": ["ecb"],
        "unsupported_claims": ["a", "b"],
        "output_confidence": 0.2,
        "output": "last answer",
    },
    {},
]


@pytest.fixture
def governed(acme):
    from policies import services as policy_services
    from tenants.audit import Actor

    actor = Actor.system("tests")
    with scope(tenant=acme):
        policy_services.policy_create(
            tenant=acme,
            actor=actor,
            name="Warn",
            category="grounding",
            scope={},
            rules={
                "min_grounding_score": 0.8,
                "min_citations": 1,
                "max_unsupported_claims": 1,
                "action_on_violation": "warn",
            },
        )
        policy_services.policy_create(
            tenant=acme,
            actor=actor,
            name="Block",
            category="grounding",
            scope={"agents": ["research-*"]},
            rules={"min_grounding_score": 0.5, "action_on_violation": "block", "citations_must_resolve": True},
        )
    acme.refresh_from_db()
    return acme


def _stored(run_id: int) -> dict:
    """Everything a run's reports wrote, without ids and timestamps."""

    def strip(obj, *names):
        return {k: v for k, v in model_to_dict(obj).items() if k not in {"id", "run", "created_at", *names}}

    with scopes_disabled():
        decisions = list(Decision.objects.filter(run_id=run_id).order_by("id"))
        index = {d.pk: n for n, d in enumerate(decisions)}
        return {
            "run": strip(Run.objects.get(pk=run_id), "started_at"),
            "reports": [strip(r) for r in GroundingReport.objects.filter(run_id=run_id).order_by("seq")],
            "decisions": [(strip(d, "report"), d.report.seq if d.report else None) for d in decisions],
            "evaluations": [
                (strip(e, "decision"), index[e.decision_id])
                for e in Evaluation.objects.filter(run_id=run_id).order_by("id")
            ],
        }


def _record(tenant, run_id, report):
    run, decision = services.run_record_grounding(tenant=tenant, run_id=run_id, **report)
    return run.pk, run.status, run.final_action, run.report_count, decision.to_dict()


def test_the_one_statement_write_stores_what_the_locked_path_stores(governed, monkeypatch):
    tenant = governed
    with scope(tenant=tenant):
        fast_run = services.run_start(tenant=tenant, agent_name="research-agent")[0].pk
        locked_run = services.run_start(tenant=tenant, agent_name="research-agent")[0].pk
        fast = [_record(tenant, fast_run, report) for report in REPORTS]
        monkeypatch.setattr(services, "_record_grounding_in_one_statement", lambda **kwargs: None)
        locked = [_record(tenant, locked_run, report) for report in REPORTS]

    assert [answer[1:] for answer in fast] == [answer[1:] for answer in locked]
    assert fast[-1][1:4] == ("blocked", "block", 4)
    assert _stored(fast_run) == _stored(locked_run)


def test_a_report_that_lands_between_the_read_and_the_write_sends_the_call_down_the_locked_path(governed, monkeypatch):
    tenant = governed
    read, lock = rows.grounding_run_state, rows.lock_run
    events = []

    def read_then_get_overtaken(**kwargs):
        state = read(**kwargs)
        if not events:  # another call reports the source we cite after our read, before our write
            events.append("overtaken")
            services.run_record_grounding(
                tenant=tenant,
                run_id=kwargs["run_id"],
                grounding_scores=[0.9],
                sources=[{"id": "fed", "text": "Rates rose in March."}],
                unsupported_claims=["one"],
            )
        return state

    def counted_lock(**kwargs):
        events.append("locked")
        return lock(**kwargs)

    monkeypatch.setattr(rows, "grounding_run_state", read_then_get_overtaken)
    monkeypatch.setattr(rows, "lock_run", counted_lock)
    with scope(tenant=tenant):
        run_id = services.run_start(tenant=tenant, agent_name="research-agent")[0].pk
        run, decision = services.run_record_grounding(
            tenant=tenant, run_id=run_id, grounding_scores=[0.95], citations=["fed"], unsupported_claims=["two"]
        )

    # The write that found the run changed wrote nothing; the locked path decided again, on the
    # state with the other report in it, so the citation resolves (it did not when first read).
    assert events == ["overtaken", "locked"]
    assert decision.action == "allow", decision.reason
    assert run.report_count == 2
    stored = _stored(run_id)
    assert [r["citations"] for r in stored["reports"]] == [[], ["fed"]]
    assert stored["run"]["citations"] == ["fed"]
    assert stored["run"]["unsupported_claims"] == ["one", "two"]
    assert [s["id"] for s in stored["run"]["sources"]] == ["fed"]
    assert stored["run"]["report_count"] == 2
    # run_start's decision and one per report, each with one evaluation per policy.
    assert [seq for _, seq in stored["decisions"]] == [None, 1, 2]
    assert [e["action"] for e, n in stored["evaluations"] if n == 2] == ["allow", "allow"]
    assert len(stored["evaluations"]) == 3 * 2
