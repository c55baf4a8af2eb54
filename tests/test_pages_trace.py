"""The Trace tab's waterfall: spans, reports and phase decisions on the run's own time axis."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import signed_in

from governance import services
from governance.models import Decision, Evaluation, GroundingReport, Run, Span
from governance.selectors.trace import SPANS_PER_PAGE
from governance.selectors.trace_reports import MAX_REPORT_MARKERS, REPORTS_PER_PAGE
from governance.selectors.waterfall import Axis

pytestmark = pytest.mark.django_db

ROW = re.compile(
    r'<li class="gr-wf-row gr-wf-depth-(?P<indent>\d+)" data-span-id="(?P<span_id>[^"]*)" data-depth="(?P<depth>\d+)">'
    r".*?</li>",
    re.S,
)
BAR = re.compile(r'class="gr-wf-bar gr-wf-bar--\w+( gr-wf-bar--point)?" style="left: ([\d.]+)%(?:; width: ([\d.]+)%)?"')
MARKER = re.compile(
    r'<a class="gr-wf-marker gr-wf-marker--(\w+)[^"]*" href="([^"#]*)#([\w-]+)" style="left: ([\d.]+)%"'
)
TITLE = re.compile(r'<a class="gr-wf-marker gr-wf-marker--report([^"]*)" href="[^"]*" style="[^"]*" title="([^"]*)"')


def rows(html: str) -> list[dict]:
    """Each span row of the waterfall: its span_id, depth, bar position and duration label."""
    found = []
    for m in ROW.finditer(html):
        bar = BAR.search(m.group(0))
        assert bar is not None
        found.append(
            {
                "span_id": m.group("span_id"),
                "depth": int(m.group("depth")),
                "point": bool(bar.group(1)),
                "left": float(bar.group(2)),
                "width": float(bar.group(3)) if bar.group(3) else None,
                "duration": re.search(r'<span class="gr-wf-dur">([^<]*)</span>', m.group(0)).group(1),
                "text": m.group(0),
            }
        )
    return found


def markers(html: str) -> list[tuple[str, str, float]]:
    """(kind, anchor, left) of each marker that links to an entry on this page."""
    return [(kind, anchor, float(left)) for kind, page, anchor, left in MARKER.findall(html) if not page]


def report_markers(html: str) -> list[tuple[str, str, float]]:
    """(page link or "", anchor, left) of each report marker."""
    return [(page, anchor, float(left)) for kind, page, anchor, left in MARKER.findall(html) if kind == "report"]


def listed_reports(html: str) -> list[int]:
    """The seqs of the reports in the list below the waterfall, in order."""
    return [int(seq) for seq in re.findall(r'<li class="gr-tl gr-tl--report" id="report-(\d+)">', html)]


def record(tenant, run, name, start_s, end_s, *, span_id=None, parent=None, kind="tool", t0):
    services.run_record_span(
        tenant=tenant,
        run_id=run.pk,
        kind=kind,
        name=name,
        started_at=t0 + timedelta(seconds=start_s),
        ended_at=None if end_s is None else t0 + timedelta(seconds=end_s),
        span_id=span_id,
        parent_span_id=parent,
        attributes={"step": name},
    )


@pytest.fixture
def t0():
    return (timezone.now() - timedelta(minutes=5)).replace(microsecond=0)


@pytest.fixture
def timed_run(acme, t0):
    """A run of exactly 10 s: a root span (0-4 s) with a child (1-3 s, sent first), a span with no
    end at 5 s, a report at 6 s, before_workflow at 0 and after_workflow at 10 s."""
    with scopes_disabled():
        run, _ = services.run_start(tenant=acme, agent_name="research-agent", workflow_name="w", input={})
        record(acme, run, "call-model", 1, 3, span_id="child", parent="root", kind="llm", t0=t0)
        record(acme, run, "plan", 0, 4, span_id="root", t0=t0)
        record(acme, run, "fire-and-forget", 5, None, span_id="loose", t0=t0)
        services.run_record_grounding(tenant=acme, run_id=run.pk, grounding_scores=[0.9], output="x")
        services.run_complete(tenant=acme, run_id=run.pk)
        end = t0 + timedelta(seconds=10)
        Run.objects.filter(pk=run.pk).update(started_at=t0, ended_at=end, duration_ms=10_000)
        GroundingReport.objects.filter(run=run).update(created_at=t0 + timedelta(seconds=6))
        for phase, at in (("before_workflow", t0), ("after_workflow", end)):
            Decision.objects.filter(run=run, phase=phase).update(created_at=at)
            Evaluation.objects.filter(run=run, phase=phase).update(created_at=at)
        Decision.objects.filter(run=run, phase="mid_execution").update(created_at=t0 + timedelta(seconds=6))
        return Run.objects.get(pk=run.pk)


def test_bars_are_placed_by_start_and_sized_by_duration_on_the_runs_axis(alice, timed_run):
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    by_id = {r["span_id"]: r for r in rows(html)}
    assert by_id["root"]["left"] == 0.0 and by_id["root"]["width"] == 40.0 and by_id["root"]["duration"] == "4.0 s"
    assert by_id["child"]["left"] == 10.0 and by_id["child"]["width"] == 20.0 and by_id["child"]["duration"] == "2.0 s"


def test_a_child_is_drawn_under_its_parent_one_level_deeper_though_it_was_sent_first(alice, timed_run):
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    order = [(r["span_id"], r["depth"]) for r in rows(html)]
    assert order == [("root", 0), ("child", 1), ("loose", 0)]
    child = rows(html)[1]["text"]
    assert 'style="padding-left: 1rem"' in child


def test_a_span_without_an_end_is_a_point_that_says_so(alice, timed_run):
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    loose = next(r for r in rows(html) if r["span_id"] == "loose")
    assert loose["point"] and loose["width"] is None and loose["left"] == 50.0
    assert loose["duration"] == "no end recorded"


def test_reports_and_phases_are_markers_on_the_same_axis_after_workflow_last(alice, timed_run):
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    found = markers(html)
    kinds = [(kind, left) for kind, _, left in found]
    assert kinds == [("phase", 0.0), ("report", 60.0), ("phase", 100.0)]
    assert found[1][1] == "report-1" and 'id="report-1"' in html
    assert f'id="{found[2][1]}"' in html  # after_workflow's entry in the list below
    assert "after_workflow at +10.0 s" in html


def test_the_duration_in_the_summary_is_the_one_the_timeline_shows(alice, timed_run):
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    assert "<dt>Duration</dt><dd>10.0 s</dd>" in html
    assert 'Run took <strong class="gr-wf-total">10.0 s</strong>' in html
    assert "recorded outside the run" not in html
    assert "3 spans · 1 grounding report · 2 phase decisions" in html
    ticks = re.findall(r'<span class="gr-wf-tick" style="left: ([\d.]+)%">([^<]+)</span>', html)
    labels = ["0", "2 s", "4 s", "6 s", "8 s", "10 s"]
    assert ticks == [(f"{p:.3f}", label) for p, label in zip(range(0, 101, 20), labels, strict=True)]


def test_hovering_a_span_shows_its_attributes_and_details_open_without_javascript(alice, timed_run):
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    root = next(r for r in rows(html) if r["span_id"] == "root")["text"]
    assert 'title="{&quot;step&quot;: &quot;plan&quot;}"' in root
    assert '<details class="gr-wf-span">' in root and "<summary" in root
    assert "Started <time" in root and "ended +4.0 s" in root


def test_a_span_outside_the_run_widens_the_axis_and_says_why(alice, acme, timed_run, t0):
    with scopes_disabled():
        record(acme, timed_run, "late", 12, 20, t0=t0)
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    assert "<dt>Duration</dt><dd>10.0 s</dd>" in html
    assert "the axis spans 20.0 s: some events were recorded outside the run" in html
    by_name = {re.search(r'gr-wf-span-name">([^<]+)', r["text"]).group(1): r for r in rows(html)}
    assert by_name["plan"]["width"] == 20.0 and by_name["late"]["left"] == 60.0


def test_a_parent_never_recorded_leaves_its_child_at_the_top_saying_so(alice, acme, t0):
    with scopes_disabled():
        run, _ = services.run_start(tenant=acme, agent_name="research-agent", workflow_name="w", input={})
        record(acme, run, "orphan", 0, 1, span_id="kid", parent="not-sent", t0=t0)
        record(acme, run, "a", 0, 1, span_id="a", parent="b", t0=t0)
        record(acme, run, "b", 0, 1, span_id="b", parent="a", t0=t0)  # a cycle: drawn once each
    html = signed_in(alice).get(f"/runs/{run.pk}/?tab=trace").content.decode()
    found = rows(html)
    assert sorted(r["span_id"] for r in found) == ["a", "b", "kid"]
    kid = next(r for r in found if r["span_id"] == "kid")
    assert kid["depth"] == 0 and "its parent <code>not-sent</code> is not recorded" in kid["text"]


def test_a_big_run_is_drawn_a_page_of_spans_at_a_time_with_constant_queries(
    alice, acme, t0, django_assert_max_num_queries
):
    with scopes_disabled():
        run, _ = services.run_start(tenant=acme, agent_name="research-agent", workflow_name="w", input={})
        services.run_complete(tenant=acme, run_id=run.pk)
        Run.objects.filter(pk=run.pk).update(started_at=t0, ended_at=t0 + timedelta(seconds=500), duration_ms=500_000)
        client = signed_in(alice)
        with django_assert_max_num_queries(20) as few:
            client.get(f"/runs/{run.pk}/?tab=trace")
        Span.objects.bulk_create(
            Span(
                tenant=acme,
                run=run,
                kind="tool",
                name=f"step {n}",
                started_at=t0 + timedelta(seconds=n),
                ended_at=t0 + timedelta(seconds=n + 1),
                span_id=f"s{n}",
            )
            for n in range(450)
        )
    with django_assert_max_num_queries(20) as many:
        first = client.get(f"/runs/{run.pk}/?tab=trace").content.decode()
    assert len(many.captured_queries) <= len(few.captured_queries) + 2  # the page's spans and their bounds
    assert len(rows(first)) == SPANS_PER_PAGE == 200
    assert "Spans 1–200 of 450" in first and "Show more spans" in first and "Earlier spans" not in first
    assert first.count('<li class="gr-tl gr-tl--span"') == 200  # the list below the waterfall too
    # The axis is the whole run's on every page: span 449 sits at 449/500 of it.
    last = client.get(f"/runs/{run.pk}/?tab=trace&spans=3").content.decode()
    assert "Spans 401–450 of 450" in last and "Show more spans" not in last and "Earlier spans" in last
    found = rows(last)
    assert len(found) == 50 and found[-1]["span_id"] == "s449" and found[-1]["left"] == 89.8
    # A page past the end is the last page; anything else is the first.
    assert "Spans 401–450" in client.get(f"/runs/{run.pk}/?tab=trace&spans=99").content.decode()
    assert "Spans 1–200" in client.get(f"/runs/{run.pk}/?tab=trace&spans=-1x").content.decode()


def test_another_tenants_run_trace_is_404(charlie, timed_run):
    client = signed_in(charlie)
    assert client.get(f"/runs/{timed_run.pk}/?tab=trace").status_code == 404
    assert client.get(f"/runs/{timed_run.pk}/?tab=trace&spans=2").status_code == 404


def test_a_running_run_draws_up_to_its_last_event(alice, acme, t0):
    with scopes_disabled():
        run, _ = services.run_start(tenant=acme, agent_name="research-agent", workflow_name="w", input={})
        Run.objects.filter(pk=run.pk).update(started_at=t0)
        Decision.objects.filter(run=run).update(created_at=t0)
        record(acme, run, "first", 0, 0.5, span_id="f", t0=t0)
        record(acme, run, "second", 0.5, 0.8, span_id="s", t0=t0)
    html = signed_in(alice).get(f"/runs/{run.pk}/?tab=trace").content.decode()
    assert "<dd>still running</dd>" in html
    assert 'Still running: <strong class="gr-wf-total">800 ms</strong> so far' in html
    second = next(r for r in rows(html) if r["span_id"] == "s")
    assert second["left"] == 62.5 and second["width"] == 37.5


@pytest.mark.parametrize(
    ("total_ms", "labels"),
    [
        (800, ["0", "200 ms", "400 ms", "600 ms", "800 ms"]),
        (10_000, ["0", "2 s", "4 s", "6 s", "8 s", "10 s"]),
        (7_800, ["0", "2 s", "4 s", "6 s"]),
        (45, ["0", "10 ms", "20 ms", "30 ms", "40 ms"]),
        (150_000, ["0", "30 s", "60 s", "90 s", "120 s", "150 s"]),
        (5_400_000, ["0", "15 min", "30 min", "45 min", "1 h", "1.25 h", "1.5 h"]),
        (300_000, ["0", "1 min", "2 min", "3 min", "4 min", "5 min"]),
        (4 * 3_600_000, ["0", "1 h", "2 h", "3 h", "4 h"]),
    ],
)
def test_axis_ticks_read_in_the_unit_of_their_step(total_ms, labels, t0):
    axis = Axis(starts=t0, ends=t0 + timedelta(milliseconds=total_ms))
    ticks = axis.ticks()
    assert [t.label for t in ticks] == labels
    assert all(0 <= t.pct <= 100 for t in ticks)


def add_reports(tenant, run, n, *, t0, first_seq=2, blocked=(), counted=True):
    """n more reports, one a second from 6 s on after the fixture's report, each with its
    mid_execution decision (a block for the seqs in `blocked`) and that decision's evaluation;
    counted in the run's report_count as the services count them, unless `counted` is False."""
    with scopes_disabled():
        reports = GroundingReport.objects.bulk_create(
            GroundingReport(
                tenant=tenant,
                run=run,
                seq=seq,
                grounding_scores=[0.8],
                citations=[f"s{seq}"],
                output=f"answer {seq}",
                created_at=t0 + timedelta(seconds=6 + seq - 1),
            )
            for seq in range(first_seq, first_seq + n)
        )
        decisions = Decision.objects.bulk_create(
            Decision(
                tenant=tenant,
                run=run,
                report=r,
                phase="mid_execution",
                action="block" if r.seq in blocked else "allow",
                reason=f"said on {r.seq}",
                created_at=r.created_at,
            )
            for r in reports
        )
        Evaluation.objects.bulk_create(
            Evaluation(
                tenant=tenant,
                run=run,
                decision=d,
                policy_name="Grounding",
                category="grounding",
                agent_name=run.agent_name,
                phase="mid_execution",
                action=d.action,
                reason=d.reason,
                created_at=d.created_at,
            )
            for d in decisions
        )
        Run.objects.filter(pk=run.pk).update(
            ended_at=t0 + timedelta(seconds=10 + first_seq + n),
            report_count=first_seq + n - 1 if counted else F("report_count"),
        )


def test_the_bounds_these_tests_read_in():
    assert (REPORTS_PER_PAGE, MAX_REPORT_MARKERS) == (20, 100)


def test_a_run_with_many_reports_lists_a_page_of_them_and_marks_every_one(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 59, t0=t0, blocked={41})  # 60 in all: a marker each, three pages
    client = signed_in(alice)
    first = client.get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    assert listed_reports(first) == list(range(1, 21))
    assert "3 spans · 60 grounding reports · 2 phase decisions" in first
    assert "Grounding reports 1–20 of 60" in first
    assert 'href="?tab=trace&amp;reports=21#events"' in first and "Show more reports" in first
    assert "Earlier reports" not in first
    # Every report has its marker; those listed on another page link to the page that starts there.
    marked = report_markers(first)
    assert [anchor for _, anchor, _ in marked] == [f"report-{seq}" for seq in range(1, 61)]
    assert all(page == "" for page, _, _ in marked[:20])
    assert marked[45][0] == "?tab=trace&amp;reports=46"
    assert marked[0][2] < marked[45][2] < marked[59][2]
    # The phase decisions are listed on every page.
    assert first.count('<li class="gr-tl gr-tl--decision">') == 2

    second = client.get(f"/runs/{timed_run.pk}/?tab=trace&reports=21").content.decode()
    assert listed_reports(second) == list(range(21, 41))
    assert 'href="?tab=trace#events"' in second and "Earlier reports" in second  # back to the first page
    assert 'href="?tab=trace&amp;reports=41#events"' in second

    last = client.get(f"/runs/{timed_run.pk}/?tab=trace&reports=41").content.decode()
    assert listed_reports(last) == list(range(41, 61))
    assert "Grounding reports 41–60 of 60" in last and "Show more reports" not in last
    assert 'href="?tab=trace&amp;reports=21#events"' in last
    assert 'id="report-46"' in last and report_markers(last)[45][0] == ""
    assert "said on 41" in last and "said on 41" not in first  # the page's reports come with their decisions
    assert last.count('<li class="gr-tl gr-tl--decision">') == 2

    # A page that starts anywhere: a page from there, and a whole page back.
    middle = client.get(f"/runs/{timed_run.pk}/?tab=trace&reports=50").content.decode()
    assert listed_reports(middle) == list(range(50, 61))
    assert 'href="?tab=trace&amp;reports=30#events"' in middle


def test_a_run_with_more_reports_than_markers_marks_them_in_buckets(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 499, t0=t0, blocked={4, 5, 300})  # 500: buckets of 5
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    assert "500 grounding reports" in html
    marked = report_markers(html)
    assert len(marked) == MAX_REPORT_MARKERS
    assert [anchor for _, anchor, _ in marked[:3]] == ["report-1", "report-6", "report-11"]
    assert marked[-1][1] == "report-496" and marked[-1][0] == "?tab=trace&amp;reports=496"
    titles = dict((title.split(" at ")[0], classes) for classes, title in TITLE.findall(html))
    assert "gr-wf-marker--block" in titles["Grounding reports 1–5 (5 reports: 2 block, 3 allow)"]
    assert "gr-wf-marker--many" in titles["Grounding reports 1–5 (5 reports: 2 block, 3 allow)"]
    assert "gr-wf-marker--block" not in titles["Grounding reports 6–10 (5 reports: 5 allow)"]
    assert "gr-wf-marker--block" in titles["Grounding reports 296–300 (5 reports: 1 block, 4 allow)"]
    assert listed_reports(html) == list(range(1, 21))


def test_reports_written_around_the_services_are_still_marked_within_the_bound(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 499, t0=t0, counted=False)  # report_count still says 1
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    marked = report_markers(html)
    assert len(marked) == MAX_REPORT_MARKERS and marked[1][1] == "report-6" and marked[-1][1] == "report-496"
    assert "500 grounding reports" in html


def test_the_trace_tab_makes_as_many_queries_for_500_reports_as_for_one(alice, acme, timed_run, t0):
    client = signed_in(alice)
    url = f"/runs/{timed_run.pk}/?tab=trace"
    with CaptureQueriesContext(connection) as one:
        assert client.get(url).status_code == 200
    add_reports(acme, timed_run, 499, t0=t0)
    with CaptureQueriesContext(connection) as many:
        html = client.get(url).content.decode()
    assert listed_reports(html) == list(range(1, 21))
    assert len(many.captured_queries) == len(one.captured_queries)
    with CaptureQueriesContext(connection) as later:
        html = client.get(f"{url}&reports=301").content.decode()
    assert listed_reports(html) == list(range(301, 321))
    assert len(later.captured_queries) == len(one.captured_queries) + 1  # where the page before starts


def test_span_and_report_pages_keep_each_other(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 249, t0=t0)
    with scopes_disabled():
        Span.objects.bulk_create(
            Span(tenant=acme, run=timed_run, kind="tool", name=f"step {n}", started_at=t0, span_id=f"x{n}")
            for n in range(250)
        )
    client = signed_in(alice)
    html = client.get(f"/runs/{timed_run.pk}/?tab=trace&spans=2&reports=101").content.decode()
    assert "Spans 201–253 of 253" in html and listed_reports(html) == list(range(101, 121))
    assert 'href="?tab=trace&amp;spans=1&amp;reports=101"' in html  # Earlier spans, same reports
    assert 'href="?tab=trace&amp;spans=2&amp;reports=121#events"' in html  # Show more reports, same spans
    assert 'href="?tab=trace&amp;spans=2&amp;reports=81#events"' in html  # Earlier reports, same spans
    assert "with spans 201–253" in html
    assert 'href="?tab=trace&amp;spans=2&amp;reports=199#report-199"' in html  # a bucket of 3, same spans


@pytest.mark.parametrize("query", ["reports=abc", "reports=-5", "reports=%C2%B2", "reports=1" + "0" * 12, "reports="])
def test_a_bad_report_page_is_the_first_page(alice, acme, timed_run, t0, query):
    add_reports(acme, timed_run, 149, t0=t0)
    response = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace&{query}")
    assert response.status_code == 200
    assert listed_reports(response.content.decode()) == list(range(1, 21))


def test_a_report_page_past_the_end_is_the_last_page(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 149, t0=t0)
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace&reports=999999").content.decode()
    assert listed_reports(html) == list(range(131, 151))
    assert 'href="?tab=trace&amp;reports=111#events"' in html and "Show more reports" not in html


def test_a_bad_span_page_is_the_first_page_not_an_error(alice, timed_run):
    response = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace&spans=%C2%B2")  # "²" is a digit to str
    assert response.status_code == 200 and len(rows(response.content.decode())) == 3


def test_another_tenants_run_is_404_on_any_report_page(charlie, acme, timed_run, t0):
    add_reports(acme, timed_run, 149, t0=t0)
    client = signed_in(charlie)
    for query in ("reports=101", "reports=abc", "spans=2&reports=101"):
        assert client.get(f"/runs/{timed_run.pk}/?tab=trace&{query}").status_code == 404


def test_a_retrieval_result_cited_by_a_report_on_a_later_page_is_marked_cited(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 29, t0=t0)  # reports 2-30 cite "s2".."s30"
    with scopes_disabled():
        results = [{"source_id": ident, "relevance": 0.9, "text": ident} for ident in ("s30", "never-cited")]
        services.run_record_span(
            tenant=acme,
            run_id=timed_run.pk,
            kind="retrieval",
            name="kb-search",
            started_at=t0 + timedelta(seconds=2),
            ended_at=t0 + timedelta(seconds=3),
            attributes={"provenance": {"results_by_source": {"kb": results}}},
        )
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    assert listed_reports(html) == list(range(1, 21))  # report 30 is on the next page
    cells = re.findall(r'<td class="gr-cited-cell">\s*(.*?)\s*</td>', html, re.S)
    assert len(cells) == 2 and "cited" in cells[0] and "not cited" not in cells[0] and "not cited" in cells[1]


def test_the_summary_adds_up_every_report_however_many(alice, acme, timed_run, t0):
    add_reports(acme, timed_run, 299, t0=t0)  # a citation each, no claims
    with scopes_disabled():
        GroundingReport.objects.filter(run=timed_run, seq=2).update(
            citations=["a", {"source_id": "b"}], unsupported_claims=["x", "y"], output_confidence=0.5
        )
        GroundingReport.objects.filter(run=timed_run, seq=3).update(output_confidence=0.7)
        GroundingReport.objects.filter(run=timed_run, seq=4).update(citations={"not": "a list"})
    html = signed_in(alice).get(f"/runs/{timed_run.pk}/?tab=trace").content.decode()
    # 299 added, one of them with two, one with none; the fixture's report has none.
    assert "<dt>Citations collected</dt><dd>299</dd>" in html
    assert "<dt>Unsupported claims</dt><dd>2</dd>" in html
    assert "<dt>Output confidence</dt><dd>0.7</dd>" in html  # the latest reported; later reports had none
