"""The score-audit endpoints: the tenant's rate, every agent's figures, one agent's days."""

from datetime import date, timedelta

import pytest
from django_scopes import scope, scopes_disabled

from governance.models import AgentScoreAuditDay
from tenants.models import AuditEvent
from tests.api_support import post_json, row_counts

pytestmark = pytest.mark.django_db


def _day(tenant, agent, day, pairs, not_auditable=0):
    """A day's sums from (reported, measured) pairs, as the audit task keeps them."""
    with scope(tenant=tenant):
        AgentScoreAuditDay.objects.create(
            tenant=tenant,
            agent_name=agent,
            date=day,
            audited=len(pairs),
            not_auditable=not_auditable,
            sum_reported=sum(x for x, _ in pairs),
            sum_measured=sum(y for _, y in pairs),
            sum_reported_sq=sum(x * x for x, _ in pairs),
            sum_measured_sq=sum(y * y for _, y in pairs),
            sum_products=sum(x * y for x, y in pairs),
        )


def _run(api, agent):
    assert post_json(api, "/api/v1/runs/", {"agent_name": agent}).status_code == 201


def test_the_rate_defaults_to_a_tenth_and_an_update_is_audited(api, acme):
    assert api.get("/api/v1/settings/score-audit/").json() == {"rate": 0.1, "auditor": "local", "model": "gpt-4o-mini"}
    response = api.put("/api/v1/settings/score-audit/", {"rate": 0.25}, format="json")
    assert response.status_code == 200 and response.json()["rate"] == 0.25
    acme.refresh_from_db()
    assert acme.score_audit_rate == 0.25
    with scope(tenant=acme):
        event = AuditEvent.objects.get(action="tenants.tenant.score_audit_rate_changed")
    assert (event.before, event.after) == ({"score_audit_rate": 0.1}, {"score_audit_rate": 0.25})


@pytest.mark.parametrize(
    "body",
    [{"rate": 1.5}, {"rate": -0.1}, {"rate": "0.5"}, {"rate": None}, {}, {"rate": 0.5, "extra": 1}, {"rate": True}],
)
def test_a_bad_rate_is_a_400_naming_the_field_and_writes_nothing(api, acme, body):
    before = row_counts()
    response = api.put("/api/v1/settings/score-audit/", body, format="json")
    assert response.status_code == 400
    assert set(response.json()) & {"rate", "extra"}
    assert row_counts() == before
    acme.refresh_from_db()
    assert acme.score_audit_rate == 0.1


def test_one_agents_figures_and_days(api, acme):
    _run(api, "research-agent")
    today = date.today()
    _day(acme, "research-agent", today - timedelta(days=1), [(0.9, 0.5), (0.8, 0.6)], not_auditable=3)
    _day(acme, "research-agent", today, [(0.95, 0.45)])
    body = api.get("/api/v1/agents/research-agent/score-audit/").json()
    assert body["agent_name"] == "research-agent"
    assert (body["audited_reports"], body["not_auditable"]) == (3, 3)
    assert body["reported_mean"] == pytest.approx(0.8833, abs=1e-4)
    assert body["measured_mean"] == pytest.approx(0.5167, abs=1e-4)
    assert body["inflation"] == pytest.approx(0.3667, abs=1e-4)
    assert body["correlation"] is None  # under 10 samples
    assert [d["date"] for d in body["by_day"]] == [(today - timedelta(days=1)).isoformat(), today.isoformat()]
    assert body["by_day"][1] == {
        "date": today.isoformat(),
        "audited": 1,
        "reported_mean": 0.95,
        "measured_mean": 0.45,
        "inflation": 0.5,
        "margin": 0.98,  # one sample: the band spans nearly all of 0..1
        "few_samples": True,
    }
    assert body["few_samples"] is True and body["needs_attention"] is False
    windowed = api.get(f"/api/v1/agents/research-agent/score-audit/?since={today.isoformat()}").json()
    assert windowed["audited_reports"] == 1 and len(windowed["by_day"]) == 1


def test_correlation_from_ten_samples(api, acme):
    _run(api, "research-agent")
    pairs = [(0.5 + i * 0.05, 0.4 + i * 0.05) for i in range(10)]  # measured tracks reported exactly
    _day(acme, "research-agent", date.today(), pairs)
    body = api.get("/api/v1/agents/research-agent/score-audit/").json()
    assert body["correlation"] == pytest.approx(1.0, abs=1e-6)
    assert body["inflation"] == pytest.approx(0.1, abs=1e-6)


def test_every_agent_most_inflated_first(api, acme):
    for agent in ("honest", "inflating", "new"):
        _run(api, agent)
    _day(acme, "honest", date.today(), [(0.8, 0.78)])
    _day(acme, "inflating", date.today(), [(0.95, 0.3)])
    _day(acme, "new", date.today(), [], not_auditable=2)
    agents = api.get("/api/v1/score-audit/").json()["agents"]
    assert [a["agent_name"] for a in agents] == ["inflating", "honest", "new"]
    assert agents[2]["inflation"] is None and agents[2]["not_auditable"] == 2


def test_an_agent_needing_attention_comes_before_a_larger_gap_from_one_sample(api, acme):
    for agent in ("one-sample", "steady-inflater", "noisy"):
        _run(api, agent)
    _day(acme, "one-sample", date.today(), [(1.0, 0.0)])
    # Twelve reports, each 0.45 above what was measured: an interval of the mean gap well above 0.2.
    _day(acme, "steady-inflater", date.today(), [(0.9 - i * 0.01, 0.45 - i * 0.01) for i in range(12)])
    # Twelve reports whose gaps swing from −0.4 to +0.9: a mean of 0.25, an interval reaching below 0.2.
    _day(acme, "noisy", date.today(), [(0.9, 0.0), (0.5, 0.9)] * 6)
    listed = api.get("/api/v1/score-audit/").json()["agents"]
    agents = {a["agent_name"]: a for a in listed}
    assert [a["agent_name"] for a in listed] == ["steady-inflater", "one-sample", "noisy"]
    steady, one, noisy = agents["steady-inflater"], agents["one-sample"], agents["noisy"]
    assert steady["needs_attention"] and not steady["few_samples"] and steady["audited_reports"] == 12
    assert steady["inflation_low"] == pytest.approx(0.45, abs=1e-3) and steady["inflation_high"] == pytest.approx(
        0.45, abs=1e-3
    )
    assert one["few_samples"] and not one["needs_attention"] and one["inflation_low"] is None
    assert noisy["inflation"] == pytest.approx(0.25, abs=1e-3)
    assert not noisy["few_samples"] and noisy["inflation_low"] < 0.2 and not noisy["needs_attention"]


def test_another_tenants_agent_is_a_404_and_never_listed(api, other_api, acme, globex):
    _run(other_api, "globex-agent")
    _day(globex, "globex-agent", date.today(), [(0.9, 0.1)])
    assert api.get("/api/v1/agents/globex-agent/score-audit/").status_code == 404
    assert api.get("/api/v1/score-audit/").json() == {"agents": []}
    assert other_api.get("/api/v1/agents/globex-agent/score-audit/").status_code == 200
    # The rate is per tenant, too.
    assert other_api.put("/api/v1/settings/score-audit/", {"rate": 0.9}, format="json").status_code == 200
    assert api.get("/api/v1/settings/score-audit/").json()["rate"] == 0.1


@pytest.mark.parametrize(
    "query,field",
    [("since=yesterday", "since"), ("until=2026-13-01", "until"), ("since=2026-11-20&until=2026-11-01", "until")],
)
def test_a_bad_window_is_a_400_naming_the_field(api, acme, query, field):
    _run(api, "research-agent")
    assert field in api.get(f"/api/v1/agents/research-agent/score-audit/?{query}").json()
    assert api.get(f"/api/v1/score-audit/?{query}").status_code == 400


def test_an_agent_name_no_run_can_have_is_a_404(api, acme):
    assert api.get("/api/v1/agents/%00/score-audit/").status_code == 404
    assert api.get(f"/api/v1/agents/{'a' * 300}/score-audit/").status_code == 404
    assert api.get("/api/v1/agents/nobody/score-audit/").status_code == 404


def test_without_a_key_it_is_a_401(client, acme):
    assert client.get("/api/v1/score-audit/").status_code == 401
    with scopes_disabled():
        assert AgentScoreAuditDay.objects.count() == 0


def test_a_date_time_with_an_offset_names_its_utc_day(api, acme):
    # The days are UTC days: 23:30 at UTC-5 on the 20th is 04:30 UTC on the 21st, so the 21st is in
    # a window that ends then, and the 20th is not in one that starts then.
    _run(api, "research-agent")
    _day(acme, "research-agent", date(2026, 11, 20), [(0.8, 0.8)])
    _day(acme, "research-agent", date(2026, 11, 21), [(0.9, 0.5)])
    url = "/api/v1/agents/research-agent/score-audit/"

    until = api.get(url, {"until": "2026-11-20T23:30:00-05:00"}).json()
    since = api.get(url, {"since": "2026-11-20T23:30:00-05:00"}).json()

    assert [d["date"] for d in until["by_day"]] == ["2026-11-20", "2026-11-21"]
    assert [d["date"] for d in since["by_day"]] == ["2026-11-21"]
    assert (
        api.get("/api/v1/score-audit/", {"since": "2026-11-21T00:30:00+02:00"}).json()["agents"][0]["audited_reports"]
        == 2
    )


def test_a_date_time_past_year_9999_in_utc_is_a_400(api, acme):
    _run(api, "research-agent")
    for url in ("/api/v1/agents/research-agent/score-audit/", "/api/v1/score-audit/"):
        response = api.get(url, {"since": "9999-12-31T23:00:00-05:00"})
        assert response.status_code == 400 and "since" in response.json()


def test_an_agent_whose_runs_retention_removed_keeps_its_figures(api, acme):
    # Retention removes runs; the per-day sums stay. An agent the list shows must not be a 404.
    _day(acme, "retired-agent", date.today() - timedelta(days=40), [(0.9, 0.5), (0.8, 0.6)])

    listed = api.get("/api/v1/score-audit/").json()["agents"]
    response = api.get("/api/v1/agents/retired-agent/score-audit/")

    assert [a["agent_name"] for a in listed] == ["retired-agent"]
    assert response.status_code == 200, response.content
    assert response.json()["audited_reports"] == 2 and response.json()["inflation"] == 0.3
