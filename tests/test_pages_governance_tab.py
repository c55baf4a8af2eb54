"""A run's Governance tab as a compact table: one row per evaluation, details folded in the row,
a policy x phase summary above, stored-rules rows folded away, reasons naming their policy."""

import re

import pytest
from django_scopes import scopes_disabled
from pages_support import LENIENT, STRICT, run_through, signed_in

from governance.models import Evaluation

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
