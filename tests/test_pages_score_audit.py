"""The Score audit page and the measured score beside each reported one on the Trace tab."""

from datetime import date

import pytest
from django_scopes import scope

from governance.models import AgentScoreAuditDay, ScoreAudit
from tests.api_support import post_json

pytestmark = pytest.mark.django_db

SOURCES = [{"id": "pricing", "text": "Premium users get 1,000 requests per minute."}]


def _day(tenant, agent, reported, measured, n=1):
    with scope(tenant=tenant):
        AgentScoreAuditDay.objects.create(
            tenant=tenant,
            agent_name=agent,
            date=date.today(),
            audited=n,
            sum_reported=reported * n,
            sum_measured=measured * n,
            sum_reported_sq=reported**2 * n,
            sum_measured_sq=measured**2 * n,
            sum_products=reported * measured * n,
        )


def test_agents_are_listed_most_inflated_first_with_a_chart_each(client, dave, acme, globex):
    _day(acme, "honest-agent", 0.8, 0.75)
    _day(acme, "inflating-agent", 0.95, 0.2)
    _day(globex, "globex-agent", 0.99, 0.0)
    client.force_login(dave)
    page = client.get("/score-audit/").content.decode()
    assert page.index("inflating-agent") < page.index("honest-agent")
    assert "globex-agent" not in page
    assert "<strong>0.75</strong>" in page  # 0.95 − 0.2
    assert page.count("data-score-chart=") == 2
    assert '<script id="score-audit-chart-0" type="application/json">' in page
    assert "not ground truth" in page


def test_the_page_says_when_nothing_was_audited(client, dave, acme):
    client.force_login(dave)
    assert "No report has been audited in the last 30 days." in client.get("/score-audit/").content.decode()


def test_the_page_needs_a_member_and_shows_only_their_tenant(client, charlie, acme):
    _day(acme, "acme-agent", 0.9, 0.1)
    assert client.get("/score-audit/").status_code == 302  # to sign-in
    client.force_login(charlie)  # globex's admin
    response = client.get("/score-audit/")
    assert response.status_code == 200 and "acme-agent" not in response.content.decode()


def test_the_trace_tab_shows_the_measured_score_beside_the_reported_one(
    client, alice, api, acme, django_capture_on_commit_callbacks
):
    assert api.put("/api/v1/settings/score-audit/", {"rate": 1.0}, format="json").status_code == 200
    run_id = post_json(api, "/api/v1/runs/", {"agent_name": "a"}).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        post_json(
            api,
            f"/api/v1/runs/{run_id}/grounding/",
            {
                "grounding_scores": [0.97],
                "citations": ["pricing"],
                "sources": SOURCES,
                "output": "Premium users get 9,000 requests per minute.",
            },
        )
    client.force_login(alice)
    page = client.get(f"/runs/{run_id}/?tab=trace").content.decode()
    with scope(tenant=acme):
        measured = ScoreAudit.objects.get().per_source[0]["measured"]
    assert measured < 0.2  # a contradicted claim
    assert 'class="gr-score-measured"' in page and f"measured <strong>{measured}</strong>" in page


def test_an_admin_sets_the_rate_on_the_settings_page(client, alice, acme):
    client.force_login(alice)
    page = client.get("/settings/score-audit/").content.decode()
    assert 'name="score_audit_rate"' in page and 'value="0.1"' in page
    response = client.post("/settings/score-audit/", {"score_audit_rate": "0.5"})
    assert response.status_code == 302
    acme.refresh_from_db()
    assert acme.score_audit_rate == 0.5


def test_a_bad_rate_on_the_settings_page_is_refused_and_nothing_changes(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/score-audit/", {"score_audit_rate": "2"})
    assert response.status_code == 400 and "less than or equal to 1.0" in response.content.decode()
    acme.refresh_from_db()
    assert acme.score_audit_rate == 0.1


def test_reviewers_and_viewers_cannot_change_the_rate(client, bob, dave, acme):
    for user in (bob, dave):
        client.force_login(user)
        assert client.post("/settings/score-audit/", {"score_audit_rate": "0.9"}).status_code == 403
    acme.refresh_from_db()
    assert acme.score_audit_rate == 0.1
