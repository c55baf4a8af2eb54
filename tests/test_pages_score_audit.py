"""The Score audit page and the measured score beside each reported one on the Trace tab."""

import json
import re
from datetime import date, timedelta

import pytest
from django_scopes import scope

from governance.models import AgentScoreAuditDay, ScoreAudit
from tests.api_support import post_json

pytestmark = pytest.mark.django_db

SOURCES = [{"id": "pricing", "text": "Premium users get 1,000 requests per minute."}]


def _day(tenant, agent, reported, measured, n=1, day=None, auditor="local"):
    """A day's sums for ``n`` audited reports, each reporting ``reported`` and measured ``measured``."""
    with scope(tenant=tenant):
        AgentScoreAuditDay.objects.create(
            tenant=tenant,
            agent_name=agent,
            date=day or date.today(),
            auditor=auditor,
            audited=n,
            sum_reported=reported * n,
            sum_measured=measured * n,
            sum_reported_sq=reported**2 * n,
            sum_measured_sq=measured**2 * n,
            sum_products=reported * measured * n,
        )


def _rows(page: str) -> list[str]:
    """The agents in the table's order."""
    table = page[page.index('id="score-audit-agents"') :]
    table = table[: table.index("</table>")]
    return re.findall(r'<tr data-agent="([^"]+)"', table)


def _chart(page: str) -> dict:
    raw = re.search(r'<script id="score-audit-chart" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(raw.group(1))


def test_every_mean_shows_its_sample_count_and_a_single_sample_is_too_few_to_judge(client, dave, acme):
    _day(acme, "one-shot-agent", 0.0, 0.0, n=1)
    _day(acme, "busy-agent", 0.8, 0.75, n=40)
    client.force_login(dave)
    page = client.get("/score-audit/").content.decode()
    one = page[page.index('data-agent="one-shot-agent"') :]
    one = one[: one.index("</tr>")]
    assert one.count('0.00 <span class="gr-muted">(n=1)</span>') == 2  # reported and measured
    assert "Too few to judge" in one and "Needs attention" not in one
    busy = page[page.index('data-agent="busy-agent"') :]
    busy = busy[: busy.index("</tr>")]
    assert '0.80 <span class="gr-muted">(n=40)</span>' in busy and '0.75 <span class="gr-muted">(n=40)</span>' in busy
    assert "Within range" in busy and "Too few" not in busy
    assert "under 10 it is too few to judge" in page


def test_agents_needing_attention_come_first_then_the_largest_gap(client, dave, acme, globex):
    _day(acme, "honest-agent", 0.8, 0.75, n=30)
    _day(acme, "one-wild-report", 1.0, 0.0, n=1)  # the largest gap, from one sample
    _day(acme, "inflating-agent", 0.95, 0.3, n=12)
    _day(acme, "mild-agent", 0.9, 0.6, n=3)
    _day(globex, "globex-agent", 0.99, 0.0, n=50)
    client.force_login(dave)
    page = client.get("/score-audit/").content.decode()
    assert _rows(page) == ["inflating-agent", "one-wild-report", "mild-agent", "honest-agent"]
    inflating = page[page.index('data-agent="inflating-agent"') :]
    assert "Needs attention" in inflating[: inflating.index("</tr>")]
    assert page.count("Needs attention") == 1
    assert "<strong>0.65</strong>" in page  # 0.95 − 0.3
    assert "globex-agent" not in page
    assert "not ground truth" in page
    # The chart shows the agent most needing attention unless another is asked for.
    assert "inflating-agent: reported and measured per day" in page
    assert page.count("data-score-chart=") == 1


def test_the_chart_has_one_point_per_day_with_gaps_and_bands_that_widen_with_few_samples(client, dave, acme):
    today = date.today()
    _day(acme, "research-agent", 0.9, 0.5, n=25, day=today)
    _day(acme, "research-agent", 0.9, 0.4, n=1, day=today - timedelta(days=2))
    client.force_login(dave)
    page = client.get("/score-audit/?agent=research-agent").content.decode()
    data = _chart(page)
    assert len(data["labels"]) == 30 and data["labels"][-1] == today.isoformat()
    assert data["samples"][-3:] == [1, 0, 25]
    assert data["measured"][-3:] == [0.4, None, 0.5]  # the empty day is a gap, not a zero
    assert data["reported"][:27] == [None] * 27
    assert data["few_samples"][-3:] == [True, True, False]
    one_wide = data["measured_high"][-3] - data["measured_low"][-3]
    many_wide = data["measured_high"][-1] - data["measured_low"][-1]
    assert one_wide > 0.75 and many_wide == pytest.approx(2 * 0.196, abs=1e-3)  # 1.96 · 0.5 / √25, both sides
    assert data["measured_low"][-2] is None
    # The same numbers without JavaScript: a row per day.
    table = page[page.index('id="score-audit-days-table"') :]
    assert table.count("<tr data-date=") == 30
    empty = table[table.index(f'data-date="{(today - timedelta(days=1)).isoformat()}"') :]
    assert "no samples" in empty[: empty.index("</tr>")]
    few = table[table.index(f'data-date="{(today - timedelta(days=2)).isoformat()}"') :]
    few = few[: few.index("</tr>")]
    assert '0.40 <span class="gr-muted">(n=1)</span>' in few and ">few<" in few and "0.98" in few


def test_the_window_and_auditor_can_be_chosen(client, dave, acme):
    today = date.today()
    _day(acme, "research-agent", 0.9, 0.5, n=4, day=today - timedelta(days=40))
    _day(acme, "research-agent", 0.7, 0.6, n=2, day=today, auditor="llm")
    client.force_login(dave)
    page = client.get("/score-audit/?agent=research-agent&auditor=local&days=60").content.decode()
    data = _chart(page)
    assert len(data["labels"]) == 60 and data["samples"][-41] == 4 and sum(data["samples"]) == 4
    assert 'value="60"' in page
    llm = _chart(client.get("/score-audit/?agent=research-agent&auditor=llm").content.decode())
    assert sum(llm["samples"]) == 2 and llm["reported"][-1] == 0.7


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("days=0", "days"),
        ("days=366", "days"),
        ("days=abc", "days"),
        ("auditor=robot", "auditor"),
        ("agent=" + "a" * 201, "agent"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(client, dave, acme, query, field):
    _day(acme, "research-agent", 0.9, 0.5)
    client.force_login(dave)
    response = client.get(f"/score-audit/?{query}")
    assert response.status_code == 400
    page = response.content.decode()
    assert f"<strong>{field}</strong>:" in page and 'id="score-audit-agents"' not in page


def test_another_tenants_agent_is_a_404_and_never_charted(client, dave, acme, globex):
    _day(acme, "acme-agent", 0.9, 0.5)
    _day(globex, "globex-agent", 0.99, 0.0, n=20)
    client.force_login(dave)
    assert client.get("/score-audit/?agent=globex-agent").status_code == 404
    assert client.get("/score-audit/?agent=nobody").status_code == 404
    page = client.get("/score-audit/").content.decode()
    assert "globex-agent" not in page and _rows(page) == ["acme-agent"]


def test_an_agent_known_but_not_audited_in_the_window_has_an_empty_chart(client, dave, acme):
    _day(acme, "old-agent", 0.9, 0.5, day=date.today() - timedelta(days=100))
    client.force_login(dave)
    response = client.get("/score-audit/?agent=old-agent")
    assert response.status_code == 200
    data = _chart(response.content.decode())
    assert sum(data["samples"]) == 0 and set(data["measured"]) == {None}


def test_the_page_reads_a_constant_number_of_queries(client, dave, acme, django_assert_max_num_queries):
    client.force_login(dave)
    for i in range(3):
        _day(acme, f"agent-{i}", 0.9, 0.5, n=5)
    with django_assert_max_num_queries(12) as few:
        client.get("/score-audit/")
    for i in range(3, 30):
        for back in range(10):
            _day(acme, f"agent-{i}", 0.9, 0.5, n=5, day=date.today() - timedelta(days=back))
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get("/score-audit/?agent=agent-29").status_code == 200


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
