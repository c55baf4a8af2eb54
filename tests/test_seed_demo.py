"""`make run` loads the demo: a login that works, policies, and runs to browse in every outcome."""

from io import StringIO

import pytest
from django.core.management import call_command
from django_scopes import scopes_disabled

from governance.models import Evaluation, Run, Span
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
