"""What a reviewer reads on the triage pages, checked against what they say: a filter error names the
field it is about, the lede does not claim an order the list is not in, an empty workspace is not told
about a period, and the review queue's filters fit their labels."""

import html as html_lib
import re
from collections import Counter
from datetime import date, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django_scopes import scopes_disabled
from pages_support import LENIENT, STRICT, run_through, signed_in

from governance.models import AgentScoreAuditDay, Evaluation, Run, ScoreAudit

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def _field_error(html: str, field_id: str) -> str | None:
    match = re.search(rf'<p class="gr-field-error" id="{field_id}-error">([^<]*)</p>', html)
    return match.group(1) if match else None


@pytest.mark.parametrize("field, field_id", [("agent", "f-agent"), ("workflow", "f-workflow"), ("policy", "f-policy")])
def test_a_bad_runs_filter_is_shown_on_its_own_field(alice, acme, field, field_id):
    html = signed_in(alice).get(f"/runs/?{field}=a%00b").content.decode()
    assert "fix the highlighted fields" in html
    assert _field_error(html, field_id) == "Null characters are not allowed."
    assert f'id="{field_id}" name="{field}"' in html
    assert f'aria-invalid="true" aria-describedby="{field_id}-error"' in html


@pytest.mark.parametrize("field, field_id", [("agent", "f-agent"), ("policy", "f-policy")])
def test_a_bad_violations_filter_is_shown_on_its_own_field(bob, acme, field, field_id):
    html = signed_in(bob).get(f"/violations/?{field}=a%00b").content.decode()
    assert "fix the highlighted fields" in html
    assert _field_error(html, field_id) == "Null characters are not allowed."
    assert f'aria-invalid="true" aria-describedby="{field_id}-error"' in html


def test_the_runs_lede_does_not_say_newest_first_of_a_sorted_list(alice, acme):
    run_through(acme)
    html = signed_in(alice).get("/runs/?sort=score").content.decode()
    lede = re.search(r'<p class="gr-lede">([^<]*)</p>', html).group(1)
    assert not lede.endswith("newest first.")
    assert "select a column header to sort" in lede


def test_the_sort_travels_with_the_results_so_filtering_after_a_header_click_keeps_it(alice, acme):
    """A header click swaps only the results; the hidden sort the filter form sends lives there."""
    run_through(acme)
    fragment = signed_in(alice).get("/runs/?sort=-duration", **HX).content.decode()
    assert "<html" not in fragment
    assert '<input type="hidden" name="sort" value="-duration" form="run-filters">' in fragment
    page = signed_in(alice).get("/runs/").content.decode()
    assert '<form class="gr-filters" id="run-filters"' in page
    assert 'name="sort"' not in page  # newest first: nothing to keep


def test_an_empty_workspace_is_not_told_about_a_period(alice, acme):
    html = signed_in(alice).get("/").content.decode()
    assert "Connect your first agent" in html
    lede = re.search(r'<p class="gr-lede">([^<]*)</p>', html).group(1)
    assert lede == acme.name
    run_through(acme)
    html = signed_in(alice).get("/").content.decode()
    lede = re.search(r'<p class="gr-lede">([^<]*)</p>', html).group(1)
    assert lede == f"{acme.name} · last 24 hours (UTC)"


def test_the_violations_action_filter_names_its_default_in_a_word_that_fits(bob, acme):
    html = signed_in(bob).get("/violations/").content.decode()
    select = html[html.index('<select id="f-action"') : html.index("</select>", html.index('<select id="f-action"'))]
    assert re.findall(r"<option[^>]*>([^<]*)</option>", select) == ["Both", "warn", "block"]


def test_the_demo_runs_list_durations_agree_with_their_start_and_end():
    """The demo moves each run back in time; its runs list must then show how long it really took."""
    call_command("seed_demo", "--runs", "6", stdout=StringIO())
    with scopes_disabled():
        runs = list(Run.objects.filter(tenant__slug="demo"))
    assert len(runs) == 6
    for run in runs:
        assert run.duration_ms == int((run.ended_at - run.started_at).total_seconds() * 1000)
        assert run.duration_ms >= 400  # the demo's runs take 0.4 to 9 seconds


@pytest.mark.django_db(transaction=True)  # as `make run` loads it: each audit runs when its report commits
def test_the_demo_score_audits_fall_on_their_runs_days(alice):
    """The score audit chart of the demo spreads over the week of its runs, not one column on the day it
    was loaded, and its daily sums are those of the audits on each day."""
    call_command("seed_demo", "--runs", "24", stdout=StringIO())
    with scopes_disabled():
        audits = list(ScoreAudit.objects.filter(tenant__slug="demo").select_related("report"))
        days = {(d.agent_name, d.date): d for d in AgentScoreAuditDay.objects.filter(tenant__slug="demo")}
    assert len(audits) >= 3
    assert all(a.created_at == a.report.created_at for a in audits)
    # The agent the chart opens on (the most audited, when none is flagged) has a line, not a point.
    top = Counter(a.agent_name for a in audits).most_common(1)[0][0]
    assert len({a.created_at.date() for a in audits if a.agent_name == top}) >= 3
    for (agent, day), row in days.items():
        on_day = [a for a in audits if a.agent_name == agent and a.created_at.date() == day]
        assert row.audited + row.not_auditable == len(on_day)
        measured = [a.measured for a in on_day if a.status != ScoreAudit.Status.NOT_AUDITABLE]
        assert row.sum_measured == pytest.approx(sum(measured))
    html = signed_in(alice).get("/score-audit/").content.decode()
    assert "No report has been audited" in html  # alice's tenant is not the demo's


def _audit_day(tenant, agent, pairs, day=None):
    """A day's sums of audited reports, one (reported, measured) pair each."""
    with scopes_disabled():
        AgentScoreAuditDay.objects.create(
            tenant=tenant,
            agent_name=agent,
            date=day or date.today(),
            auditor="local",
            audited=len(pairs),
            sum_reported=sum(r for r, _ in pairs),
            sum_measured=sum(m for _, m in pairs),
            sum_reported_sq=sum(r * r for r, _ in pairs),
            sum_measured_sq=sum(m * m for _, m in pairs),
            sum_products=sum(r * m for r, m in pairs),
        )


def test_with_no_agent_flagged_the_chart_is_the_most_audited_agents(dave, acme):
    """The table puts the largest gap first, which with a few samples is noise: the chart shows the agent
    whose line says the most."""
    today = date.today()
    _audit_day(acme, "two-odd-reports", [(0.9, 0.0), (0.9, 0.1)])
    for back in range(6):
        _audit_day(acme, "steady-agent", [(0.8, 0.7), (0.9, 0.8)], day=today - timedelta(days=back))
    html = signed_in(dave).get("/score-audit/").content.decode()
    assert re.findall(r'<tr data-agent="([^"]+)"', html) == ["two-odd-reports", "steady-agent"]
    assert "steady-agent: reported and measured per day" in html
    # An agent asked for is still the one drawn.
    html = signed_in(dave).get("/score-audit/?agent=two-odd-reports").content.decode()
    assert "two-odd-reports: reported and measured per day" in html


def test_a_gap_interval_never_reaches_past_what_a_gap_can_be(dave, acme):
    _audit_day(acme, "wild-agent", [(0.9, 0.0), (0.8, 0.7)])  # gaps 0.9 and 0.1: a mean of 0.5, widely spread
    html = signed_in(dave).get("/score-audit/").content.decode()
    row = html[html.index('data-agent="wild-agent"') :]
    row = row[: row.index("</tr>")]
    low, high = (float(n) for n in re.search(r"\((-?[\d.]+) to (-?[\d.]+)\)", row).groups())
    assert -1.0 <= low < 0.5 < high <= 1.0
    assert high == 1.0  # 0.5 + 1.96 · 0.4 would be 1.28


def test_every_number_of_the_top_tables_opens_a_list_of_that_many_violations(bob, acme, make_policy):
    make_policy(name="Strict", rules=STRICT, agents=["research-*"])
    make_policy(name="Lenient", rules=LENIENT, agents=["*"])
    run_through(acme, agent="research-agent", scores=(0.42,))
    run_through(acme, agent="research-agent", scores=(0.55,))
    run_through(acme, agent="support-bot", scores=(0.3,))
    client = signed_in(bob)
    html = client.get("/?period=7d").content.decode()
    tables = html[html.index('id="top-policies-title"') :]
    cells = re.findall(r'<td class="gr-num"><a class="gr-link-quiet" href="([^"]+)">(?:<strong>)?(\d+)', tables)
    assert len(cells) == 3 * (2 + 2)  # warnings, blocks, total of two policies and two agents
    for href, shown in cells:
        listed = client.get(html_lib.unescape(href)).content.decode().count("<tr data-id=")
        assert listed == int(shown), href
    assert sum(int(n) for _, n in cells) > 0


@pytest.mark.parametrize(
    "query, says",
    [
        ("?agent=steady-agent&auditor=llm", "No report of steady-agent was audited by the LLM judge in these 30 days"),
        ("?agent=old-agent", "No report of old-agent was audited by the local verifier in these 30 days"),
    ],
)
def test_a_chart_with_nothing_to_draw_says_so_instead_of_empty_axes(dave, acme, query, says):
    _audit_day(acme, "steady-agent", [(0.8, 0.7), (0.9, 0.8)])
    _audit_day(acme, "old-agent", [(0.8, 0.7)], day=date.today() - timedelta(days=100))
    html = signed_in(dave).get(f"/score-audit/{query}").content.decode()
    assert f'<p class="gr-empty-inline" id="score-audit-chart-empty">{says}: nothing to draw.</p>' in html
    assert "data-score-chart=" not in html
    html = signed_in(dave).get("/score-audit/?agent=steady-agent").content.decode()
    assert "score-audit-chart-empty" not in html and html.count("data-score-chart=") == 1


@pytest.fixture
def two_agent_queue(acme, make_policy):
    """Pending blocks of two agents, interleaved: newest first, the ids of each agent's."""
    make_policy(name="Strict", rules=STRICT, agents=["*"])
    for n in range(3):
        run_through(acme, agent="research-agent", scores=(0.3 + n / 100,))
        run_through(acme, agent="support-bot", scores=(0.3 + n / 100,))
    with scopes_disabled():
        pending = Evaluation.objects.filter(tenant=acme, action="block", review_state="pending").order_by("-id")
        return {
            agent: list(pending.filter(agent_name=agent).values_list("id", flat=True))
            for agent in ("research-agent", "support-bot")
        }


def test_next_pending_walks_the_queue_as_the_reviewer_filtered_it(bob, two_agent_queue):
    mine = two_agent_queue["support-bot"]
    assert len(mine) >= 3
    client = signed_in(bob)
    html = client.get("/violations/?agent=support-bot&review_state=pending").content.decode()
    assert f'href="/violations/{mine[0]}/?agent=support-bot" id="next-pending"' in html
    seen = [mine[0]]
    for _ in range(len(mine) - 1):
        detail = client.get(f"/violations/{seen[-1]}/?agent=support-bot").content.decode()
        seen.append(int(re.search(r'id="next-pending" href="/violations/(\d+)/\?agent=support-bot"', detail).group(1)))
        assert 'href="/violations/?agent=support-bot">Violations</a>' in detail  # back to the filtered list
    assert seen == mine  # the other agent's pending ones, newer and in between, are skipped
    # Unfiltered, the queue is everyone's.
    html = client.get("/violations/").content.decode()
    newest = max(mine[0], two_agent_queue["research-agent"][0])
    assert f'href="/violations/{newest}/" id="next-pending"' in html


def test_a_review_keeps_the_queue_filters_for_the_next_one(bob, two_agent_queue):
    mine = two_agent_queue["support-bot"]
    response = signed_in(bob).post(
        f"/violations/{mine[0]}/?agent=support-bot", {"state": "confirmed", "comment": "Below the bar."}
    )
    assert response.status_code == 302 and response["Location"] == f"/violations/{mine[0]}/?agent=support-bot"
    detail = signed_in(bob).get(response["Location"]).content.decode()
    assert f'id="next-pending" href="/violations/{mine[1]}/?agent=support-bot"' in detail


def test_bad_queue_filters_on_a_violation_fall_back_to_the_whole_queue(bob, two_agent_queue):
    mine = two_agent_queue["support-bot"]
    response = signed_in(bob).get(f"/violations/{mine[0]}/?agent=a%00b&review_state=bogus")
    assert response.status_code == 200
    assert 'id="next-pending" href="/violations/' in response.content.decode()


def test_another_tenants_queue_filters_lead_nowhere_else(charlie, two_agent_queue):
    mine = two_agent_queue["support-bot"]
    assert signed_in(charlie).get(f"/violations/{mine[0]}/?agent=support-bot").status_code == 404
    html = signed_in(charlie).get("/violations/?agent=support-bot").content.decode()
    assert 'id="next-pending"' not in html


def test_the_last_pending_violation_offers_no_next_pending_that_is_itself(bob, acme, make_policy):
    make_policy(name="Strict", rules=STRICT, agents=["*"])
    run_through(acme, agent="support-bot", scores=(0.3,))
    with scopes_disabled():
        blocks = list(Evaluation.objects.filter(tenant=acme, action="block").order_by("id"))
        assert len(blocks) >= 2
        Evaluation.objects.filter(pk__in=[b.pk for b in blocks[:-1]]).update(review_state="confirmed")
        only = blocks[-1].pk
    detail = signed_in(bob).get(f"/violations/{only}/").content.decode()
    assert 'id="next-pending"' not in detail
    assert f'href="/violations/{only}/" id="next-pending"' in signed_in(bob).get("/violations/").content.decode()
