"""The overview: runs, warns and blocks for a period, a chart, the most violated policies and agents."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import LENIENT, STRICT, bulk_violations, run_through, signed_in

from governance.models import Evaluation, Run

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def _stat(html: str, label: str) -> int:
    match = re.search(rf'<span class="gr-stat-label">{label}</span><span class="gr-stat-value">(\d+)</span>', html)
    return int(match.group(1))


def _chart(html: str) -> dict:
    match = re.search(r'<script id="overview-chart-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def _backdate(run: Run, delta: timedelta) -> None:
    with scopes_disabled():
        Run.objects.filter(pk=run.pk).update(started_at=run.started_at - delta)
        for e in Evaluation.objects.filter(run=run):
            Evaluation.objects.filter(pk=e.pk).update(created_at=e.created_at - delta)


@pytest.fixture
def history(acme, make_policy):
    """Recent: 2 research runs blocked (2 blocks each), 1 support run warned (2 warns), 1 clean run.
    Ten days ago: 1 blocked research run. Forty days ago: 1 blocked research run."""
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    make_policy(name="Lenient RAG Agent", rules=LENIENT, agents=["support-*"])
    run_through(acme, agent="research-agent", scores=(0.42,))
    run_through(acme, agent="research-agent", scores=(0.5,))
    run_through(acme, agent="support-bot", scores=(0.3,))
    run_through(acme, agent="support-bot", scores=(0.9,), citations=["a", "b"], confidence=0.9)
    _backdate(run_through(acme, agent="research-agent", scores=(0.1,)), timedelta(days=10))
    _backdate(run_through(acme, agent="research-agent", scores=(0.1,)), timedelta(days=40))


def _expected(since_days: float) -> tuple[int, int, int]:
    since = timezone.now() - timedelta(days=since_days)
    with scopes_disabled():
        runs = Run.objects.filter(started_at__gte=since).count()
        warns = Evaluation.objects.filter(created_at__gte=since, action="warn").count()
        blocks = Evaluation.objects.filter(created_at__gte=since, action="block").count()
    return runs, warns, blocks


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_sees_the_overview(who, request, history):
    response = signed_in(request.getfixturevalue(who)).get("/")
    assert response.status_code == 200
    assert "<h1>Overview</h1>" in response.content.decode()


def test_anonymous_visitor_is_sent_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("period, days", [("24h", 1), ("7d", 7), ("30d", 30)])
def test_numbers_match_the_data_for_each_period(alice, history, period, days):
    html = signed_in(alice).get(f"/?period={period}").content.decode()
    runs, warns, blocks = _expected(days)
    assert (_stat(html, "Runs"), _stat(html, "Warnings"), _stat(html, "Blocks")) == (runs, warns, blocks)
    chart = _chart(html)
    assert (sum(chart["runs"]), sum(chart["warns"]), sum(chart["blocks"])) == (runs, warns, blocks)
    assert len(chart["labels"]) == len(chart["runs"]) == (25 if period == "24h" else days + 1)


def test_known_numbers(alice, history):
    html = signed_in(alice).get("/?period=24h").content.decode()
    assert (_stat(html, "Runs"), _stat(html, "Warnings"), _stat(html, "Blocks")) == (4, 2, 4)
    html = signed_in(alice).get("/?period=30d").content.decode()
    assert (_stat(html, "Runs"), _stat(html, "Warnings"), _stat(html, "Blocks")) == (5, 2, 6)


def test_top_policies_and_agents_are_ranked_by_violations(alice, history):
    html = signed_in(alice).get("/?period=30d").content.decode()
    policies = html[html.index('id="top-policies-title"') : html.index('id="top-agents-title"')]
    agents = html[html.index('id="top-agents-title"') :]
    rows = re.findall(
        r'<td><a href="[^"]+">([^<]+)</a></td><td class="gr-num">(\d+)</td>'
        r'<td class="gr-num">(\d+)</td><td class="gr-num"><strong>(\d+)</strong>',
        policies,
    )
    assert rows == [("Strict Research Grounding", "0", "6", "6"), ("Lenient RAG Agent", "2", "0", "2")]
    rows = re.findall(r'<td><a href="[^"]+">([^<]+)</a></td>', agents)
    assert rows == ["research-agent", "support-bot"]


def test_each_number_links_to_a_list_with_exactly_those_rows(alice, history):
    client = signed_in(alice)
    html = client.get("/?period=7d").content.decode()
    blocks_url = re.search(r'<a class="gr-stat gr-stat--block" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    listed = re.findall(r'<a href="/violations/(\d+)/" aria-label', client.get(blocks_url).content.decode())
    assert len(listed) == _stat(html, "Blocks")
    runs_url = re.search(r'<a class="gr-stat" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    listed = re.findall(r'href="/runs/(\d+)/">#', client.get(runs_url).content.decode())
    assert len(listed) == _stat(html, "Runs")


def test_chart_data_is_also_an_accessible_table(alice, history):
    html = signed_in(alice).get("/?period=7d").content.decode()
    assert '<canvas id="overview-chart"' in html and 'role="img"' in html
    assert "Show the numbers as a table" in html and "<noscript>" in html
    assert "/static/vendor/chart.umd.min.js" in html


def test_empty_period_says_so(alice, acme):
    html = signed_in(alice).get("/").content.decode()
    assert html.count("No violations in this period.") == 2
    assert _stat(html, "Runs") == 0


def test_another_tenant_sees_none_of_it(charlie, history):
    html = signed_in(charlie).get("/?period=30d").content.decode()
    assert (_stat(html, "Runs"), _stat(html, "Warnings"), _stat(html, "Blocks")) == (0, 0, 0)
    assert "research-agent" not in html


def test_period_switch_over_htmx_returns_the_dashboard_fragment(alice, history):
    response = signed_in(alice).get("/?period=7d", **HX)
    body = response.content.decode()
    assert body.strip().startswith('<div id="overview"') and "<html" not in body
    assert 'aria-current="true">7d<' in body
    assert "HX-Request" in response["Vary"]


def test_unknown_period_falls_back_to_24_hours(alice, history):
    html = signed_in(alice).get("/?period=forever").content.decode()
    assert 'aria-current="true">24h<' in html


def test_overview_uses_a_handful_of_queries_whatever_the_volume(alice, acme, django_assert_max_num_queries):
    client = signed_in(alice)
    with django_assert_max_num_queries(8) as few:
        client.get("/?period=30d")
    bulk_violations(acme, count=500, start=timezone.now() - timedelta(hours=20))
    with django_assert_max_num_queries(8) as many:
        client.get("/?period=30d")
    assert len(many.captured_queries) == len(few.captured_queries)
