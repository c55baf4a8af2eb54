"""`make run` loads the demo: a login that works, policies, and runs to browse in every outcome."""

from io import StringIO

import pytest
from django.core.management import call_command
from django_scopes import scopes_disabled

from governance.models import Decision, Evaluation, GroundingReport, Run, Span
from policies.models import Policy
from tenants.models import ApiKey

pytestmark = pytest.mark.django_db


def test_demo_has_a_login_policies_and_runs_of_every_outcome(client):
    out = StringIO()
    call_command("seed_demo", "--runs", "24", stdout=out)
    printed = out.getvalue()
    assert "Sign in as admin@demo.local / groundrule-demo" in printed
    assert (
        "Make an admin API key (policies, secrets, keys) with: python manage.py create_api_key demo --scope admin"
        in printed
    )
    key_line = printed.strip().splitlines()[-1]
    assert key_line.startswith("Demo API key (agent scope: starts runs and reports grounding; shown once): gr_")
    with scopes_disabled():
        assert ApiKey.objects.get(tenant__slug="demo").scope == "agent"
    assert client.login(username="admin@demo.local", password="groundrule-demo")
    with scopes_disabled():
        assert Policy.objects.filter(tenant__slug="demo").count() == 5
        actions = set(Run.objects.values_list("final_action", flat=True))
        assert actions == {"allow", "warn", "block"}
        assert Evaluation.objects.filter(source="verifier", action="warn").exists()
        assert Span.objects.filter(kind="retrieval").exists()
    assert client.get("/violations/").status_code == 200

    again = StringIO()
    call_command("seed_demo", stdout=again)
    assert "already loaded" in again.getvalue()
    assert "make another with: python manage.py create_api_key demo --scope agent" in again.getvalue()
    with scopes_disabled():
        assert Run.objects.count() == 24


def test_demo_timelines_agree_with_their_runs(alice):
    """Every span within its run and its parent, reports during the run, after_workflow last, and the
    duration the run page shows is the run's own (docs/dashboard.md#trace)."""
    call_command("seed_demo", "--runs", "12", stdout=StringIO())
    with scopes_disabled():
        runs = list(Run.objects.filter(tenant__slug="demo"))
        assert len(runs) == 12
        nested = 0
        for run in runs:
            assert run.duration_ms == int((run.ended_at - run.started_at).total_seconds() * 1000) > 0
            spans = {s.span_id: s for s in Span.objects.filter(run=run)}
            for span in spans.values():
                assert span.started_at is not None and span.ended_at is not None, span.name
                assert run.started_at <= span.started_at <= span.ended_at <= run.ended_at, span.name
                if span.parent_span_id:
                    parent = spans[span.parent_span_id]
                    assert parent.started_at <= span.started_at <= span.ended_at <= parent.ended_at
                    nested += 1
            reports = list(GroundingReport.objects.filter(run=run).order_by("seq"))
            assert reports
            assert all(run.started_at <= r.created_at <= run.ended_at for r in reports)
            decisions = list(Decision.objects.filter(run=run))
            after = [d for d in decisions if d.phase == "after_workflow"]
            before = [d for d in decisions if d.phase == "before_workflow"]
            assert len(after) == len(before) == 1
            assert after[0].created_at == run.ended_at and before[0].created_at == run.started_at
            assert after[0].created_at > max(r.created_at for r in reports)
            assert after[0].created_at >= max(s.ended_at for s in spans.values())
            for e in Evaluation.objects.filter(run=run):
                assert run.started_at <= e.created_at <= run.ended_at
        assert nested >= 24  # two children under each answer step
