"""The Trace tab's waterfall in Chromium: bars where their times put them, children indented under
their parent, markers on the same axis; with the keyboard, without JavaScript, in dark mode, and on the
demo's runs."""

from datetime import timedelta
from io import StringIO

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from governance import services
from governance.models import Decision, Evaluation, GroundingReport, Run
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SYSTEM = Actor.system("tests")
PASSWORD = "correct horse battery staple"


def box(locator) -> dict:
    b = locator.bounding_box()
    assert b is not None
    return b


@pytest.fixture
def timed_run(live_server):
    """A 10 s run: "plan" 0-4 s with its child "call-model" 1-3 s, "fire-and-forget" at 5 s with no
    end, "lookup" 6-9 s, a report at 6 s, after_workflow at 10 s."""
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        alice = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=alice, role=Role.ADMIN, actor=SYSTEM)
        run, _ = services.run_start(tenant=acme, agent_name="research-agent", workflow_name="w", input={})
        t0 = (timezone.now() - timedelta(minutes=5)).replace(microsecond=0)
        for name, start, end, span_id, parent in (
            ("call-model", 1, 3, "child", "root"),
            ("plan", 0, 4, "root", None),
            ("fire-and-forget", 5, None, "loose", None),
            ("lookup", 6, 9, "late", None),
        ):
            services.run_record_span(
                tenant=acme,
                run_id=run.pk,
                kind="llm" if name == "call-model" else "tool",
                name=name,
                started_at=t0 + timedelta(seconds=start),
                ended_at=None if end is None else t0 + timedelta(seconds=end),
                span_id=span_id,
                parent_span_id=parent,
                attributes={"step": name},
            )
        services.run_record_grounding(tenant=acme, run_id=run.pk, grounding_scores=[0.9], output="x")
        services.run_complete(tenant=acme, run_id=run.pk)
        end = t0 + timedelta(seconds=10)
        Run.objects.filter(pk=run.pk).update(started_at=t0, ended_at=end, duration_ms=10_000)
        GroundingReport.objects.filter(run=run).update(created_at=t0 + timedelta(seconds=6))
        Decision.objects.filter(run=run, phase="mid_execution").update(created_at=t0 + timedelta(seconds=6))
        for phase, at in (("before_workflow", t0), ("after_workflow", end)):
            Decision.objects.filter(run=run, phase=phase).update(created_at=at)
            Evaluation.objects.filter(run=run, phase=phase).update(created_at=at)
    return run.pk


def row(page, span_id):
    return page.locator(f'li.gr-wf-row[data-span-id="{span_id}"]')


def assert_drawn_to_scale(page) -> None:
    track = box(row(page, "root").locator(".gr-wf-track"))
    width = track["width"]
    assert width > 300

    def placed(span_id):
        bar = box(row(page, span_id).locator(".gr-wf-bar"))
        return (bar["x"] - track["x"]) / width, bar["width"] / width

    plan_left, plan_width = placed("root")
    child_left, child_width = placed("child")
    late_left, late_width = placed("late")
    assert plan_left == pytest.approx(0.0, abs=0.005) and plan_width == pytest.approx(0.4, abs=0.005)
    assert child_left == pytest.approx(0.1, abs=0.005) and child_width == pytest.approx(0.2, abs=0.005)
    assert late_left == pytest.approx(0.6, abs=0.005) and late_width == pytest.approx(0.3, abs=0.005)
    # Bars are as long as their spans took: 4 s, 2 s and 3 s.
    assert plan_width / child_width == pytest.approx(2.0, rel=0.03)
    assert late_width / child_width == pytest.approx(1.5, rel=0.03)
    # The span with no end is a small point centred on its start (5 s), not a bar.
    point = box(row(page, "loose").locator(".gr-wf-bar"))
    assert point["width"] < 16 and (point["x"] + point["width"] / 2 - track["x"]) / width == pytest.approx(
        0.5, abs=0.01
    )
    # Every row's track is the same axis.
    for span_id in ("child", "loose", "late"):
        other = box(row(page, span_id).locator(".gr-wf-track"))
        assert other["x"] == pytest.approx(track["x"], abs=1) and other["width"] == pytest.approx(width, abs=1)
    # The child's name is indented right of its parent's.
    plan_name = box(row(page, "root").locator(".gr-kind"))
    child_name = box(row(page, "child").locator(".gr-kind"))
    assert child_name["x"] - plan_name["x"] == pytest.approx(16, abs=3)
    # Rows in tree order: the child right under its parent.
    assert page.locator("li.gr-wf-row").evaluate_all("rows => rows.map(r => r.dataset.spanId)") == [
        "root",
        "child",
        "loose",
        "late",
    ]
    # Markers: before_workflow at 0, the report at 6 s, after_workflow at the very end.
    centres = [(box(m)["x"] + box(m)["width"] / 2 - track["x"]) / width for m in page.locator(".gr-wf-marker").all()]
    assert centres == [pytest.approx(0.0, abs=0.01), pytest.approx(0.6, abs=0.01), pytest.approx(1.0, abs=0.01)]


def test_bars_markers_and_indentation_follow_the_spans_times(browser_page, sign_in, timed_run, screenshot):
    page = browser_page
    sign_in(page, "alice", PASSWORD, next_path=f"/runs/{timed_run}/")
    page.get_by_role("link", name="Trace", exact=True).click()  # over htmx
    expect(page).to_have_url(f"{page.url.split('?')[0]}?tab=trace")
    expect(page.locator("li.gr-wf-row")).to_have_count(4)
    expect(page.locator(".gr-wf-total")).to_have_text("10.0 s")
    expect(page.locator(".gr-summary")).to_contain_text("10.0 s")
    expect(row(page, "loose").locator(".gr-wf-dur")).to_have_text("no end recorded")
    expect(row(page, "root").locator(".gr-wf-dur")).to_have_text("4.0 s")
    assert_drawn_to_scale(page)
    # Hover names the attributes; the keyboard opens a row for them and its start and end.
    assert row(page, "root").locator("summary").get_attribute("title") == '{"step": "plan"}'
    row(page, "root").locator("summary").focus()
    page.keyboard.press("Enter")
    details = row(page, "root").locator(".gr-wf-more")
    expect(details).to_be_visible()
    expect(details).to_contain_text("ended +4.0 s")
    expect(details.locator("dt", has_text="step")).to_be_visible()
    expect(details.locator("dd", has_text="plan")).to_be_visible()
    page.keyboard.press("Tab")  # into the open row: its link to the entry below
    expect(details.get_by_role("link", name="details below")).to_be_focused()
    page.keyboard.press("Tab")
    expect(row(page, "child").locator("summary")).to_be_focused()
    screenshot(page, "trace-waterfall")


def test_the_waterfall_is_drawn_without_javascript_and_in_dark_mode(
    chromium, live_server, timed_run, dark_page, screenshot
):
    from django.test import Client

    client = Client()
    client.login(username="alice", password=PASSWORD)
    cookie = client.cookies["sessionid"].value
    host = live_server.url.split("//")[1].split(":")[0]
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}, java_script_enabled=False
    )
    context.add_cookies([{"name": "sessionid", "value": cookie, "domain": host, "path": "/"}])
    page = context.new_page()
    page.goto(f"/runs/{timed_run}/?tab=trace")
    assert_drawn_to_scale(page)
    # A row opens without JavaScript: <details>.
    row(page, "child").locator("summary").click()
    expect(row(page, "child").locator(".gr-wf-more")).to_contain_text("ended +3.0 s")
    context.close()

    dark_page.context.add_cookies([{"name": "sessionid", "value": cookie, "domain": host, "path": "/"}])
    dark_page.goto(f"/runs/{timed_run}/?tab=trace")
    assert_drawn_to_scale(dark_page)
    colours = dark_page.evaluate(
        """() => ['.gr-wf-bar--tool', '.gr-wf-grid']
            .map(s => getComputedStyle(document.querySelector(s)).backgroundColor)"""
    )
    bar, grid = colours
    assert bar != grid and bar not in ("rgba(0, 0, 0, 0)", "transparent")
    assert dark_page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
    screenshot(dark_page, "trace-waterfall-dark", full_page=False)


def test_the_demos_runs_draw_one_consistent_timeline(browser_page, sign_in, screenshot):
    call_command("seed_demo", "--runs", "4", stdout=StringIO())
    with scopes_disabled():
        run = (
            Run.objects.filter(tenant__slug="demo", report_count=2).first()
            or Run.objects.filter(tenant__slug="demo").first()
        )
    page = browser_page
    sign_in(page, "admin@demo.local", "groundrule-demo", next_path=f"/runs/{run.pk}/")
    page.goto(f"/runs/{run.pk}/?tab=trace")
    summary = page.locator(".gr-summary div", has_text="Duration").locator("dd").inner_text()
    expect(page.locator(".gr-wf-total")).to_have_text(summary)
    expect(page.locator(".gr-wf-note")).to_have_count(0)  # nothing outside the run
    rows = page.locator("li.gr-wf-row")
    assert rows.count() >= 4
    track = box(rows.first.locator(".gr-wf-track"))
    for i in range(rows.count()):
        bar = box(rows.nth(i).locator(".gr-wf-bar"))
        assert track["x"] - 1 <= bar["x"] and bar["x"] + bar["width"] <= track["x"] + track["width"] + 1
    # Each answer step's LLM call and formatting sit under it, indented, within its bar.
    depths = rows.evaluate_all("rows => rows.map(r => Number(r.dataset.depth))")
    assert depths.count(1) >= 2 and depths[0] == 0
    for i, depth in enumerate(depths):
        if depth == 1:
            parent = next(j for j in range(i - 1, -1, -1) if depths[j] == 0)
            outer, inner = box(rows.nth(parent).locator(".gr-wf-bar")), box(rows.nth(i).locator(".gr-wf-bar"))
            assert outer["x"] - 1 <= inner["x"] and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
    # after_workflow is the last marker, at the run's end, after every report.
    markers = page.locator(".gr-wf-marker")
    titles = markers.evaluate_all("ms => ms.map(m => m.title)")
    assert titles[0].startswith("before_workflow") and titles[-1].startswith("after_workflow")
    lefts = [box(m)["x"] for m in markers.all()]
    assert lefts == sorted(lefts) and lefts[-1] > lefts[-2]
    assert (lefts[-1] + box(markers.last)["width"] / 2 - track["x"]) / track["width"] == pytest.approx(1.0, abs=0.01)
    screenshot(page, "trace-demo", full_page=False)


@pytest.fixture
def long_run(timed_run):
    """The timed run with 45 reports: the fixture's one at 6 s and 44 more, one every 100 ms after it."""
    with scopes_disabled():
        run = Run.objects.get(pk=timed_run)
        first = GroundingReport.objects.get(run=run)
        GroundingReport.objects.bulk_create(
            GroundingReport(
                tenant_id=run.tenant_id,
                run=run,
                seq=seq,
                grounding_scores=[0.8],
                output=f"answer {seq}",
                created_at=first.created_at + timedelta(milliseconds=100 * (seq - 1)),
            )
            for seq in range(2, 46)
        )
        Run.objects.filter(pk=run.pk).update(report_count=45)
    return timed_run


def entries(page) -> list[str]:
    return page.locator("li.gr-tl--report").evaluate_all("items => items.map(i => i.id)")


def test_reports_come_a_page_at_a_time_and_every_marker_finds_its_entry(browser_page, sign_in, long_run):
    page = browser_page
    sign_in(page, "alice", PASSWORD, next_path=f"/runs/{long_run}/")
    page.goto(f"/runs/{long_run}/?tab=trace")
    assert entries(page) == [f"report-{n}" for n in range(1, 21)]
    expect(page.locator(".gr-wf-marker--report")).to_have_count(45)
    # Over htmx: the next page replaces the tab, the address says which, the list's top is in view.
    page.get_by_role("link", name="Show more reports").click()
    expect(page).to_have_url(f"{page.url.split('?')[0]}?tab=trace&reports=21")
    expect(page.locator("li.gr-tl--report").first).to_have_id("report-21")
    assert entries(page) == [f"report-{n}" for n in range(21, 41)]
    expect(page.locator("#events")).to_be_in_viewport()
    expect(page.locator(".gr-wf-marker--report")).to_have_count(45)  # the waterfall is the same
    expect(page.locator("li.gr-wf-row")).to_have_count(4)
    # A marker for a report on another page opens that page at its entry (with the keyboard: 100 ms
    # apart on a 10 s axis, the markers overlap).
    page.locator('a.gr-wf-marker[href$="#report-44"]').focus()
    page.keyboard.press("Enter")
    expect(page.locator("#report-44")).to_be_in_viewport()
    assert entries(page)[0] == "report-44" and "reports=44" in page.url
    page.get_by_role("link", name="Earlier reports").click()
    expect(page.locator("li.gr-tl--report").first).to_have_id("report-24")


def test_reports_page_without_javascript(chromium, live_server, long_run):
    from django.test import Client

    client = Client()
    client.login(username="alice", password=PASSWORD)
    host = live_server.url.split("//")[1].split(":")[0]
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    cookie = client.cookies["sessionid"].value
    context.add_cookies([{"name": "sessionid", "value": cookie, "domain": host, "path": "/"}])
    page = context.new_page()
    page.goto(f"/runs/{long_run}/?tab=trace")
    page.get_by_role("link", name="Show more reports").click()
    page.get_by_role("link", name="Show more reports").click()
    assert entries(page) == [f"report-{n}" for n in range(41, 46)]
    assert page.url.endswith("?tab=trace&reports=41#events")
    expect(page.get_by_text("Grounding reports 41–45 of 45").first).to_be_visible()
    context.close()
