"""A run's Governance tab as a compact table: one row per evaluation, details folded in the row,
a policy x phase summary above, stored-rules rows folded away, reasons naming their policy; a long
run a page of evaluations at a time, in as many queries as a short one."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_scopes import scopes_disabled
from pages_support import LENIENT, STRICT, run_through, signed_in

from governance import services
from governance.models import Decision, Evaluation, GroundingReport, Run
from governance.selectors.governance_tab import EVALUATIONS_PER_PAGE, SHADOW_SHOWN, only_stores_rules, run_counts

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_policy_run(acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    make_policy(name="Lenient Check", rules=LENIENT, agents=["research-*"])
    return run_through(acme, agent="research-agent", scores=(0.9, 0.42))


def _section(html: str, start: str, end: str) -> str:
    part = html[html.index(start) :]
    return part[: part.index(end)]


def test_one_row_per_evaluation_with_phase_policy_action_reason_source_review(alice, two_policy_run):
    html = signed_in(alice).get(f"/runs/{two_policy_run.pk}/").content.decode()
    table = _section(html, '<table class="gr-table gr-table--compact gr-gov-table">', "</table>\n</div>")
    headers = re.findall(r'<th scope="col">([^<]+)</th>', table)
    assert headers == ["Phase", "Policy", "Action", "Reason", "Source", "Review"]
    with scopes_disabled():
        shown = Evaluation.objects.filter(run=two_policy_run).exclude(phase="before_workflow")
        rows = re.findall(r'<tr class="gr-eval gr-eval--(\w+)" id="evaluation-(\d+)"', table)
        assert sorted(int(pk) for _, pk in rows) == sorted(shown.values_list("id", flat=True))
        assert [a for a, _ in rows] == [e.action for e in shown.order_by("id")]
    # The details open without JavaScript: a <details> in each row, metadata inside.
    assert table.count('<details class="gr-eval-details"') == len(rows)
    # Pending violations open on their evidence; allows stay one line.
    opened = table.count('<details class="gr-eval-details" open>')
    assert opened == sum(1 for action, _ in rows if action != "allow")
    assert re.search(r"<dt>score</dt><dd><span class=\"json-num\">0.42</span>", table)


def test_stored_rules_rows_fold_into_one_line(alice, two_policy_run):
    html = signed_in(alice).get(f"/runs/{two_policy_run.pk}/").content.decode()
    before = _section(html, 'id="phase-before_workflow"', "</tbody>")
    assert "2 policies stored their rules" in before
    assert '<tr class="gr-eval ' not in before  # nothing but the folded line
    assert html.count("Grounding rules stored") == 1  # the decision's reason, once, not once a policy


def test_the_summary_gives_each_policys_worst_action_per_phase_with_counts(alice, two_policy_run):
    html = signed_in(alice).get(f"/runs/{two_policy_run.pk}/").content.decode()
    summary = _section(html, '<table class="gr-table gr-table--compact gr-summary-table">', "</table>")
    assert re.findall(r"<th scope=\"col\"><code>(\w+)</code></th>", summary) == [
        "before_workflow",
        "mid_execution",
        "after_workflow",
    ]
    strict = _section(summary, "Strict Research Grounding</a></th>", "</tr>")
    cells = [re.sub(r"<[^>]+>", "", c).split() for c in re.findall(r"<td>(.*?)</td>", strict)]
    assert cells == [["allow", "1", "allow"], ["block", "1", "block"], ["block", "1", "block"]]
    lenient = _section(summary, "Lenient Check</a></th>", "</tr>")
    assert "badge-warn" in lenient


def test_a_decision_several_policies_spoke_in_names_each_policy(alice, two_policy_run):
    html = signed_in(alice).get(f"/runs/{two_policy_run.pk}/").content.decode()
    mid = _section(html, 'id="phase-mid_execution"', "</tbody>")
    reason = re.search(r'<span class="gr-decision-reason">([^<]+)</span>', mid).group(1)
    assert reason == "Strict Research Grounding: Grounding score (0.42) below threshold (0.8)"


def test_a_single_policy_decision_keeps_its_plain_reason(alice, acme, make_policy):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    run = run_through(acme, agent="research-agent", scores=(0.9, 0.42))
    html = signed_in(alice).get(f"/runs/{run.pk}/").content.decode()
    mid = _section(html, 'id="phase-mid_execution"', "</tbody>")
    assert '<span class="gr-decision-reason">Grounding score (0.42) below threshold (0.8)</span>' in mid


def test_any_metadata_a_check_adds_shows_in_the_rows_details(alice, two_policy_run):
    with scopes_disabled():
        e = Evaluation.objects.filter(run=two_policy_run, phase="after_workflow").first()
        e.metadata = {**e.metadata, "claims": [{"claim": "Paris is big.", "escalated_to": "gpt-4o-mini"}]}
        e.save(update_fields=["metadata"])
    html = signed_in(alice).get(f"/runs/{two_policy_run.pk}/").content.decode()
    row = _section(html, f'id="evaluation-{e.pk}"', '<span class="gr-source')
    assert "escalated_to" in row and "gpt-4o-mini" in row and "Paris is big." in row


def test_another_tenants_governance_tab_is_404(charlie, two_policy_run):
    assert signed_in(charlie).get(f"/runs/{two_policy_run.pk}/?tab=governance").status_code == 404


def test_the_governance_tab_costs_the_same_queries_with_more_policies(
    alice, acme, make_policy, django_assert_max_num_queries
):
    make_policy(name="Strict Research Grounding", rules=STRICT, agents=["research-*"])
    small = run_through(acme, agent="research-agent", scores=(0.9,))
    for n in range(4):
        make_policy(name=f"Extra {n}", rules=LENIENT, agents=["research-*"])
    big = run_through(acme, agent="research-agent", scores=(0.9, 0.3))
    client = signed_in(alice)
    client.get(f"/runs/{small.pk}/")
    with django_assert_max_num_queries(12) as few:
        client.get(f"/runs/{small.pk}/")
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(f"/runs/{big.pk}/")


# A long run: the tab reads a page of evaluations at a time, the summary from one aggregate.

SUMMARY_CELL = re.compile(r"<td>(.*?)</td>", re.S)
EVAL_ROW = re.compile(r'<tr class="gr-eval gr-eval--\w+" id="evaluation-(\d+)"')
MORE = re.compile(r'<a href="(\?tab=governance[^"#]*)#evaluations"[^>]*>Show more evaluations</a>')
EARLIER = re.compile(r'<a href="(\?tab=governance[^"#]*)#evaluations"[^>]*>Earlier evaluations</a>')


def listed(html: str) -> list[int]:
    return [int(pk) for pk in EVAL_ROW.findall(html)]


def add_reports(tenant, run, n: int, *, policies=("Grounding", "Citations", "Confidence"), blocked=()) -> None:
    """n more reports after the run's own, each with its mid_execution decision and one evaluation per
    policy (a block for the seqs in `blocked`), bulk-written as the services would, in order."""
    with scopes_disabled():
        first = GroundingReport.objects.filter(run=run).count() + 1
        reports = GroundingReport.objects.bulk_create(
            GroundingReport(tenant=tenant, run=run, seq=seq, grounding_scores=[0.8], citations=[f"s{seq}"])
            for seq in range(first, first + n)
        )
        decisions = Decision.objects.bulk_create(
            Decision(
                tenant=tenant,
                run=run,
                report=r,
                phase="mid_execution",
                action="block" if r.seq in blocked else "allow",
                reason=f"said on {r.seq}",
            )
            for r in reports
        )
        Evaluation.objects.bulk_create(
            Evaluation(
                tenant=tenant,
                run=run,
                decision=d,
                policy_name=policy,
                category="grounding",
                agent_name=run.agent_name,
                phase="mid_execution",
                action=d.action,
                reason=d.reason,
            )
            for d in decisions
            for policy in policies
        )
        Run.objects.filter(pk=run.pk).update(report_count=first + n - 1)


@pytest.fixture
def long_run(acme, make_policy):
    """Three policies; 40 reports (one sent, 39 bulk-written) before the run completes: 3 stored-rules
    rows, 120 at mid_execution, 3 at after_workflow."""

    def make(reports=40, blocked=()):
        for name in ("Grounding", "Citations", "Confidence"):
            make_policy(name=name, rules=LENIENT, agents=["research-*"])
        run = run_through(acme, agent="research-agent", scores=(0.9,), complete=False)
        add_reports(acme, run, reports - 1, blocked=blocked)
        with scopes_disabled():
            services.run_complete(tenant=acme, run_id=run.pk)
        return run

    return make


def test_the_bound_these_tests_read_in():
    assert EVALUATIONS_PER_PAGE == 50


def test_a_long_run_is_listed_a_page_of_evaluations_at_a_time_both_ways(alice, long_run):
    run = long_run(blocked={7, 39})
    client = signed_in(alice)
    with scopes_disabled():
        enforced = Evaluation.objects.filter(run=run, shadow=False)
        rows = list(enforced.exclude(phase="before_workflow").order_by("id").values_list("id", flat=True))
    assert len(rows) == 123
    pages, url = [], f"/runs/{run.pk}/?tab=governance"
    while url:
        html = client.get(url).content.decode()
        pages.append(html)
        more = MORE.search(html)
        url = f"/runs/{run.pk}/{more.group(1).replace('&amp;', '&')}" if more else None
    assert [len(listed(p)) for p in pages] == [50, 50, 23]
    assert [pk for p in pages for pk in listed(p)] == rows  # each once, in order
    assert "50 of 123 evaluations on this page, besides the 3 that only stored rules." in pages[0]
    assert "Earlier evaluations" not in pages[0]
    # The stored-rules line and the run's start on the first page; the run's end on the last.
    assert "3 policies stored their rules" in pages[0] and "stored their rules" not in pages[1]
    assert 'id="phase-before_workflow"' in pages[0] and 'id="phase-before_workflow"' not in pages[2]
    assert 'id="phase-after_workflow"' in pages[2] and 'id="phase-after_workflow"' not in pages[0]
    assert "continued from the page before" in pages[1] and "continued from the page before" not in pages[0]
    assert "said on 39" in pages[2] and "said on 39" not in pages[0]
    # A decision links to its report on the Trace tab's page that starts there, keeping this page.
    cursor = MORE.search(pages[1]).group(1).split("evaluations=")[1]
    assert f'href="?tab=trace&amp;reports=39&amp;evaluations={cursor}#report-39"' in pages[2]
    # Back again: each Earlier link opens the page before.
    for n in (2, 1):
        earlier = EARLIER.search(pages[n]).group(1).replace("&amp;", "&")
        assert listed(client.get(f"/runs/{run.pk}/{earlier}").content.decode()) == listed(pages[n - 1])
    assert EARLIER.search(pages[1]).group(1) == "?tab=governance"  # the first page has no cursor


def test_the_summary_counts_every_evaluation_on_every_page(alice, long_run):
    run = long_run(blocked={7, 39})
    html = signed_in(alice).get(f"/runs/{run.pk}/").content.decode()
    summary = _section(html, '<table class="gr-table gr-table--compact gr-summary-table">', "</table>")
    counted = 0
    for policy in ("Grounding", "Citations", "Confidence"):
        row = _section(summary, f"{policy}</a></th>", "</tr>")
        cells = [re.sub(r"<[^>]+>", " ", c).split() for c in SUMMARY_CELL.findall(row)]
        assert cells[1] == ["block", "2", "block", "·", "38", "allow"]  # mid_execution: 40 reports
        counted += sum(int(word) for cell in cells for word in cell if word.isdigit())
    with scopes_disabled():
        assert counted == Evaluation.objects.filter(run=run, shadow=False).count() == 126
    assert 'mid_execution</code> <span class="gr-muted">on each grounding report · 120 evaluations' in html


def test_stored_rules_rows_are_counted_not_listed(alice, long_run):
    run = long_run()
    html = signed_in(alice).get(f"/runs/{run.pk}/").content.decode()
    with scopes_disabled():
        folded = Evaluation.objects.filter(run=run, phase="before_workflow").values_list("id", flat=True)
        assert len(folded) == 3
    assert all(f'id="evaluation-{pk}"' not in html for pk in folded)
    before = _section(html, 'id="phase-before_workflow"', "</tbody>")
    assert "3 policies stored their rules" in before
    assert [name for name in ("Grounding", "Citations", "Confidence") if f">{name}</a></li>" in before] == [
        "Grounding",
        "Citations",
        "Confidence",
    ]
    assert before.count("Grounding rules stored") == 1


def test_the_governance_tab_makes_as_many_queries_for_500_reports_as_for_one(alice, long_run):
    run = long_run(reports=1)
    client = signed_in(alice)
    url = f"/runs/{run.pk}/?tab=governance"
    client.get(url)
    with CaptureQueriesContext(connection) as one:
        assert client.get(url).status_code == 200
    with scopes_disabled():
        Run.objects.filter(pk=run.pk).update(status="running")
    add_reports(run.tenant, run, 499)  # 1,500 more evaluations, after the run's end in id order
    with CaptureQueriesContext(connection) as many:
        html = client.get(url).content.decode()
    assert len(listed(html)) == EVALUATIONS_PER_PAGE
    assert len(many.captured_queries) == len(one.captured_queries)
    start = listed(html)[0] + 700
    with CaptureQueriesContext(connection) as later:
        html = client.get(f"{url}&evaluations={start}").content.decode()
    assert listed(html)[0] == start and len(listed(html)) == EVALUATIONS_PER_PAGE
    assert len(later.captured_queries) == len(one.captured_queries) + 1  # where the page before starts


@pytest.mark.parametrize(
    "query", ["evaluations=abc", "evaluations=-5", "evaluations=%C2%B2", "evaluations=1" + "0" * 12, "evaluations="]
)
def test_a_bad_evaluation_page_is_the_first_page(alice, long_run, query):
    run = long_run()
    client = signed_in(alice)
    first = listed(client.get(f"/runs/{run.pk}/?tab=governance").content.decode())
    response = client.get(f"/runs/{run.pk}/?tab=governance&{query}")
    assert response.status_code == 200
    assert listed(response.content.decode()) == first


def test_an_evaluation_page_past_the_end_is_the_last_page(alice, long_run):
    run = long_run()
    html = signed_in(alice).get(f"/runs/{run.pk}/?tab=governance&evaluations=999999999").content.decode()
    with scopes_disabled():
        last = list(
            Evaluation.objects.filter(run=run)
            .exclude(phase="before_workflow")
            .order_by("-id")
            .values_list("id", flat=True)
        )[:EVALUATIONS_PER_PAGE]
    assert listed(html) == sorted(last)
    assert "Show more evaluations" not in html and "Earlier evaluations" in html


def test_evaluation_and_trace_pages_keep_each_other(alice, long_run):
    run = long_run()
    client = signed_in(alice)
    start = listed(client.get(f"/runs/{run.pk}/").content.decode())[10]
    html = client.get(f"/runs/{run.pk}/?tab=governance&spans=2&reports=21&evaluations={start}").content.decode()
    more = MORE.search(html).group(1)
    assert more.startswith("?tab=governance&amp;spans=2&amp;reports=21&amp;evaluations=")
    assert EARLIER.search(html).group(1) == "?tab=governance&amp;spans=2&amp;reports=21"
    assert f'href="?tab=trace&amp;spans=2&amp;reports=21&amp;evaluations={start}"' in html  # the Trace tab
    trace = client.get(f"/runs/{run.pk}/?tab=trace&reports=21&evaluations={start}").content.decode()
    assert f'href="?tab=trace&amp;evaluations={start}#events"' in trace  # Earlier reports
    assert f'href="?tab=governance&amp;evaluations={start}&amp;reports=21"' in trace  # the Governance tab


def test_another_tenants_run_is_404_on_any_evaluation_page(charlie, long_run):
    run = long_run()
    client = signed_in(charlie)
    for query in ("evaluations=101", "evaluations=abc", "evaluations=999999999&reports=21"):
        assert client.get(f"/runs/{run.pk}/?tab=governance&{query}").status_code == 404


def test_shadow_verdicts_list_the_first_few_and_count_them_all(alice, long_run):
    run = long_run(reports=1)
    with scopes_disabled():
        Evaluation.objects.bulk_create(
            Evaluation(
                tenant=run.tenant,
                run=run,
                policy_name="Trial",
                category="grounding",
                agent_name=run.agent_name,
                phase="mid_execution",
                action="warn",
                shadow=True,
            )
            for _ in range(SHADOW_SHOWN + 5)
        )
    html = signed_in(alice).get(f"/runs/{run.pk}/").content.decode()
    shadow = html[html.index('id="shadow-violations"') :]
    assert f"{SHADOW_SHOWN + 5} evaluations, the first {SHADOW_SHOWN} here" in shadow
    assert shadow.count('aria-label="Shadow Trial: warn"') == SHADOW_SHOWN


@pytest.mark.parametrize(
    "metadata",
    [{"rules": {"min_citations": 1}}, {}, {"rules": {}, "score": 0.4}, ["rules"], 0, "rules", {"x": 1}],
)
def test_the_database_folds_exactly_the_rows_the_page_would(alice, acme, metadata):
    """The aggregate's stored-rules test (SQL on SQLite and PostgreSQL) agrees with only_stores_rules."""
    run = run_through(acme, agent="research-agent", scores=(0.9,))
    with scopes_disabled():
        decision = Decision.objects.get(run=run, phase="before_workflow")
        e = Evaluation.objects.create(
            tenant=acme,
            run=run,
            decision=decision,
            policy_name="Odd",
            category="grounding",
            agent_name=run.agent_name,
            phase="before_workflow",
            action="allow",
            metadata=metadata,
        )
        e.refresh_from_db()
        counts = run_counts(run=run)
    assert counts.folded_count == int(only_stores_rules(e))
    html = signed_in(alice).get(f"/runs/{run.pk}/").content.decode()
    assert (f'id="evaluation-{e.pk}"' in html) is not only_stores_rules(e)
