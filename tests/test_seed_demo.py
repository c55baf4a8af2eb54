"""`make run` loads the demo: a login that works, policies, and runs to browse in every outcome."""

from io import StringIO

import pytest
from django.core.management import call_command
from django_scopes import scopes_disabled

from governance.models import Evaluation, Run, Span
from policies.models import Policy

pytestmark = pytest.mark.django_db


def test_demo_has_a_login_policies_and_runs_of_every_outcome(client):
    out = StringIO()
    call_command("seed_demo", "--runs", "24", stdout=out)
    assert "Sign in as admin@demo.local / groundrule-demo" in out.getvalue()
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
    with scopes_disabled():
        assert Run.objects.count() == 24
