"""The overview: runs by final action and violating evaluations per period, each its own chart whose
totals add up; the most violated policies and agents; and for a tenant with no run, how to connect one."""

import html as html_lib
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


def _chart(html: str, name: str) -> dict:
    match = re.search(rf'<canvas id="overview-{name}-chart" data-series="([^"]*)"', html)
    data = json.loads(html_lib.unescape(match.group(1)))
    return {s["action"]: s["data"] for s in data["series"]} | {"labels": data["labels"]}


def _totals(html: str, table: str) -> list[int]:
    """The Total row of a chart's table, as a reader without JavaScript sees it."""
    section = html[html.index(f'id="overview-{table}-table"') :]
    foot = section[section.index("<tfoot>") : section.index("</tfoot>")]
    return [int(n) for n in re.findall(r'<td class="gr-num">(\d+)</td>', foot)]


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


def _expected(since_days: float) -> dict:
    since = timezone.now() - timedelta(days=since_days)
    with scopes_disabled():
        runs = Run.objects.filter(started_at__gte=since)
        evaluations = Evaluation.objects.filter(created_at__gte=since, shadow=False)
        return {
            "runs": {a: runs.filter(final_action=a).count() for a in ("allow", "warn", "block")},
            "evaluations": {a: evaluations.filter(action=a).count() for a in ("warn", "block")},
        }


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_sees_the_overview(who, request, history):
    response = signed_in(request.getfixturevalue(who)).get("/")
    assert response.status_code == 200
    assert "<h1>Overview</h1>" in response.content.decode()


def test_anonymous_visitor_is_sent_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("period, days", [("24h", 1), ("7d", 7), ("30d", 30)])
def test_each_chart_counts_one_thing_and_its_totals_add_up(alice, history, period, days):
    html = signed_in(alice).get(f"/?period={period}").content.decode()
    expected = _expected(days)
    runs, evaluations = _chart(html, "runs"), _chart(html, "evaluations")

    by_action = {a: sum(runs[a]) for a in ("allow", "warn", "block")}
    assert by_action == expected["runs"]
    assert (_stat(html, "Allowed runs"), _stat(html, "Warned runs"), _stat(html, "Blocked runs")) == (
        by_action["allow"],
        by_action["warn"],
        by_action["block"],
    )
    assert _stat(html, "Runs") == sum(by_action.values()) == sum(expected["runs"].values())
    assert _totals(html, "runs") == [*by_action.values(), _stat(html, "Runs")]

    assert (sum(evaluations["warn"]), sum(evaluations["block"])) == (
        expected["evaluations"]["warn"],
        expected["evaluations"]["block"],
    )
    assert (_stat(html, "Warnings"), _stat(html, "Blocks")) == (sum(evaluations["warn"]), sum(evaluations["block"]))
    assert _stat(html, "Violations") == _stat(html, "Warnings") + _stat(html, "Blocks")
    assert _totals(html, "evaluations") == [_stat(html, "Warnings"), _stat(html, "Blocks")]
    assert (
        len(runs["labels"]) == len(runs["allow"]) == len(evaluations["block"]) == (25 if period == "24h" else days + 1)
    )


def test_known_numbers(alice, history):
    html = signed_in(alice).get("/?period=24h").content.decode()
    assert [_stat(html, s) for s in ("Runs", "Allowed runs", "Warned runs", "Blocked runs")] == [4, 1, 1, 2]
    assert [_stat(html, s) for s in ("Violations", "Warnings", "Blocks")] == [6, 2, 4]
    html = signed_in(alice).get("/?period=30d").content.decode()
    assert [_stat(html, s) for s in ("Runs", "Allowed runs", "Warned runs", "Blocked runs")] == [5, 1, 1, 3]
    assert [_stat(html, s) for s in ("Violations", "Warnings", "Blocks")] == [8, 2, 6]


def test_a_run_with_three_blocking_evaluations_is_one_blocked_run_and_three_blocks(alice, acme):
    with scopes_disabled():
        run = Run.objects.create(tenant=acme, agent_name="research-agent", final_action="block")
    bulk_violations(acme, count=3, run=run, actions=("block",), start=timezone.now() - timedelta(minutes=5))
    html = signed_in(alice).get("/").content.decode()
    runs, evaluations = _chart(html, "runs"), _chart(html, "evaluations")
    assert (sum(runs["allow"]), sum(runs["warn"]), sum(runs["block"])) == (0, 0, 1)
    assert (sum(evaluations["warn"]), sum(evaluations["block"])) == (0, 3)
    assert (_stat(html, "Runs"), _stat(html, "Blocked runs"), _stat(html, "Blocks")) == (1, 1, 3)


def test_shadow_verdicts_and_allows_are_not_violations(alice, acme):
    with scopes_disabled():
        run = Run.objects.create(tenant=acme, agent_name="research-agent")
    ids = bulk_violations(
        acme, count=4, run=run, actions=("block", "allow"), start=timezone.now() - timedelta(minutes=5)
    )
    with scopes_disabled():
        Evaluation.objects.filter(pk=ids[0]).update(shadow=True)
    html = signed_in(alice).get("/").content.decode()
    assert (_stat(html, "Runs"), _stat(html, "Allowed runs"), _stat(html, "Blocks")) == (1, 1, 1)


def test_top_policies_and_agents_are_ranked_by_violations(alice, history):
    html = signed_in(alice).get("/?period=30d").content.decode()
    policies = html[html.index('id="top-policies-title"') : html.index('id="top-agents-title"')]
    agents = html[html.index('id="top-agents-title"') :]
    rows = re.findall(
        r'<td><a href="[^"]+">([^<]+)</a></td><td class="gr-num"><a [^>]+>(\d+)</a></td>'
        r'<td class="gr-num"><a [^>]+>(\d+)</a></td><td class="gr-num"><a [^>]+><strong>(\d+)</strong>',
        policies,
    )
    assert rows == [("Strict Research Grounding", "0", "6", "6"), ("Lenient RAG Agent", "2", "0", "2")]
    rows = re.findall(r'<td><a href="[^"]+">([^<]+)</a></td>', agents)
    assert rows == ["research-agent", "support-bot"]


def _link(html: str, label: str) -> str:
    match = re.search(rf'<a class="gr-stat[^"]*" href="([^"]+)"><span class="gr-stat-label">{label}</span>', html)
    return html_lib.unescape(match.group(1))


@pytest.mark.parametrize("label", ["Runs", "Allowed runs", "Warned runs", "Blocked runs"])
def test_each_run_number_links_to_a_runs_list_with_exactly_those_rows(alice, history, label):
    client = signed_in(alice)
    html = client.get("/?period=7d").content.decode()
    listed = re.findall(r'href="/runs/(\d+)/">#', client.get(_link(html, label)).content.decode())
    assert len(listed) == _stat(html, label)


@pytest.mark.parametrize("label", ["Violations", "Warnings", "Blocks"])
def test_each_violation_number_links_to_a_list_with_exactly_those_rows(alice, history, label):
    client = signed_in(alice)
    html = client.get("/?period=7d").content.decode()
    listed = re.findall(r'<a href="/violations/(\d+)/" aria-label', client.get(_link(html, label)).content.decode())
    assert len(listed) == _stat(html, label)


def test_each_chart_is_also_a_table_for_readers_without_javascript(alice, history):
    html = signed_in(alice).get("/?period=7d").content.decode()
    for name in ("runs", "evaluations"):
        assert f'<canvas id="overview-{name}-chart"' in html
        assert f'id="overview-{name}-table"' in html
    assert html.count('role="img"') == 2 and html.count("<noscript>") == 2
    assert "Show the runs as a table" in html and "Show the violations as a table" in html
    assert "/static/vendor/chart.umd.min.js" in html
    assert "<script>" not in html  # the Content-Security-Policy allows no inline script: data is JSON


def test_a_tenant_with_runs_outside_the_period_sees_zeros_not_the_onboarding(alice, acme):
    _backdate(run_through(acme, agent="research-agent", scores=(0.9,)), timedelta(days=40))
    html = signed_in(alice).get("/").content.decode()
    assert html.count("No violations in this period.") == 2
    assert _stat(html, "Runs") == 0
    assert "Connect your first agent" not in html


def test_an_empty_tenant_is_shown_how_to_connect_its_first_agent(alice, acme):
    html = signed_in(alice).get("/").content.decode()
    panel = html[html.index('id="connect-first-agent"') :]
    assert "Connect your first agent" in panel
    assert "export GROUNDRULE_URL=http://testserver\n" in panel
    assert "export GROUNDRULE_API_KEY=gr_YOUR_KEY" in panel
    assert "export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://testserver/v1/traces" in panel
    assert "with groundrule.Client().run(agent_name=&quot;my-agent&quot;) as run:" in panel
    assert re.search(r'<form method="post" action="/settings/api-keys/"[^>]*>', panel)
    assert '<button class="btn btn-primary" type="submit">Create an API key</button>' in panel
    assert 'id="overview-runs-chart"' not in html and "gr-segmented" not in html


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_a_member_who_is_not_an_admin_is_told_to_ask_one_instead_of_a_key_button(who, request, acme):
    html = signed_in(request.getfixturevalue(who)).get("/").content.decode()
    assert "Connect your first agent" in html and "Ask an admin of this workspace" in html
    assert "Create an API key" not in html and 'action="/settings/api-keys/"' not in html


def test_the_server_url_in_the_snippets_is_the_one_the_browser_reached(alice, acme, settings):
    settings.ALLOWED_HOSTS = ["groundrule.example.com"]
    response = signed_in(alice).get("/", HTTP_HOST="groundrule.example.com", secure=True)
    assert "export GROUNDRULE_URL=https://groundrule.example.com\n" in response.content.decode()


def test_another_tenants_runs_are_never_counted(alice, charlie, history, globex):
    run_through(globex, agent="globex-agent", scores=(0.95,))
    html = signed_in(charlie).get("/?period=30d").content.decode()
    assert (_stat(html, "Runs"), _stat(html, "Allowed runs"), _stat(html, "Warnings"), _stat(html, "Blocks")) == (
        1,
        1,
        0,
        0,
    )
    assert "research-agent" not in html and "Connect your first agent" not in html
    acme_html = signed_in(alice).get("/?period=30d").content.decode()
    assert _stat(acme_html, "Runs") == 5 and "globex-agent" not in acme_html


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
    run_through(acme, agent="research-agent", scores=(0.9,))
    with django_assert_max_num_queries(9) as few:
        client.get("/?period=30d")
    for n in range(20):
        with scopes_disabled():
            run = Run.objects.create(
                tenant=acme, agent_name=f"agent-{n}", final_action=("allow", "warn", "block")[n % 3]
            )
        bulk_violations(acme, count=25, run=run, agent=f"agent-{n}", start=timezone.now() - timedelta(hours=20 - n))
    with django_assert_max_num_queries(9) as many:
        client.get("/?period=30d")
    assert len(many.captured_queries) == len(few.captured_queries)
