"""Triage at volume in Chromium: the runs list sorted from its headers, a run's Governance tab as a
compact table whose rows open without a reload, and a reviewer working the violations queue from the
keyboard (bulk review changing N rows, one audit entry each)."""

import re
from datetime import timedelta

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django.utils import timezone
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from governance import services
from governance.models import Evaluation, Run
from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import AuditEvent, Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")
STRICT = {"min_grounding_score": 0.7, "min_citations": 1, "action_on_violation": "block"}
LENIENT = {"min_grounding_score": 0.5, "min_citations": 1, "action_on_violation": "warn"}


@pytest.fixture
def triage_world(live_server):
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        bob = get_user_model().objects.create_user("bob", "bob@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=bob, role=Role.REVIEWER, actor=SYSTEM)
        for name, rules in (("Strict", STRICT), ("Lenient", LENIENT)):
            policy_services.policy_create(
                tenant=acme, actor=SYSTEM, name=name, category="grounding", rules=rules, scope={"agents": []}
            )
        runs = []
        for n, score in enumerate((0.9, 0.3, 0.6, 0.45)):
            run, _ = services.run_start(tenant=acme, agent_name=f"agent-{n}")
            services.run_record_grounding(tenant=acme, run_id=run.pk, grounding_scores=[score], citations=["a"])
            services.run_complete(tenant=acme, run_id=run.pk, output="done")
            Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(minutes=10 - n))
            runs.append(run.pk)
    return {"tenant": acme, "runs": runs}


def _column(page, name: str) -> list[str]:
    return page.locator(f'#run-results td[data-col="{name}"]').all_inner_texts()


def test_runs_sort_from_their_headers(browser_page, sign_in, triage_world):
    page = browser_page
    sign_in(page, "bob", PASSWORD, next_path="/runs/")
    headers = page.locator("#run-results thead th").all_text_contents()
    assert [h.strip() for h in headers] == [
        "Run",
        "Final action",
        "Worst score",
        "Reports",
        "Duration",
        "Judge cost",
        "Agent",
        "Workflow",
        "Started",
        "Status",
    ]
    page.get_by_role("link", name="Worst score").click()
    expect(page).to_have_url(re.compile(r"sort=score"))
    expect(page.locator('th[data-sort="score"]')).to_have_attribute("aria-sort", "ascending")
    assert _column(page, "score") == ["0.30", "0.45", "0.60", "0.90"]
    page.get_by_role("link", name="Worst score").click()
    expect(page.locator('th[data-sort="score"]')).to_have_attribute("aria-sort", "descending")
    assert _column(page, "score") == ["0.90", "0.60", "0.45", "0.30"]
    page.get_by_role("link", name="Final action").click()
    expect(page).to_have_url(re.compile(r"sort=-action"))
    assert _column(page, "action") == ["block", "block", "block", "allow"]


def test_governance_tab_is_one_row_per_evaluation_that_opens_in_place(browser_page, sign_in, triage_world):
    page = browser_page
    run_id = triage_world["runs"][1]
    sign_in(page, "bob", PASSWORD, next_path=f"/runs/{run_id}/")
    table = page.locator("table.gr-gov-table")
    with scopes_disabled():
        shown = Evaluation.objects.filter(run_id=run_id).exclude(phase="before_workflow").count()
    expect(table.locator("tr.gr-eval")).to_have_count(shown)
    expect(page.locator("#phase-before_workflow")).to_contain_text("2 policies stored their rules")
    expect(page.locator("#phase-mid_execution .gr-decision-reason")).to_have_text(
        "Strict: Grounding score (0.3) below threshold (0.7)"
    )
    # An allow's details are folded; a pending violation's are open on its evidence.
    expect(table.locator("tr.gr-eval--block details.gr-eval-details dl.gr-eval-more").first).to_be_visible()
    first = table.locator("tr.gr-eval--allow").first
    details = first.locator("details.gr-eval-details")
    expect(details.locator("dl.gr-eval-more")).to_be_hidden()
    details.locator("summary").click()
    expect(details.locator("dl.gr-eval-more")).to_be_visible()
    expect(details).to_contain_text("citation_count")


def test_a_reviewer_confirms_three_violations_from_the_keyboard(browser_page, sign_in, triage_world):
    page = browser_page
    sign_in(page, "bob", PASSWORD, next_path="/violations/")
    rows = page.locator("[data-review-queue] tbody tr[data-id]")
    count = rows.count()
    assert count >= 3
    pending_before = page.locator('.gr-state-count[data-state="pending"] strong').inner_text()
    assert int(pending_before) == count
    page.get_by_label("Comment for the selected").fill("Scores below the bar, confirmed.")
    page.locator("body").click(position={"x": 5, "y": 5})
    for _ in range(3):
        page.keyboard.press("j")
        page.keyboard.press("x")
    chosen = [int(rows.nth(n).get_attribute("data-id")) for n in range(3)]
    page.keyboard.press("c")
    expect(page.locator(".messages")).to_contain_text("3 violations confirmed.")
    expect(page.locator('.gr-state-count[data-state="confirmed"] strong')).to_have_text("3")
    expect(page.locator('.gr-state-count[data-state="pending"] strong')).to_have_text(str(count - 3))
    with scopes_disabled():
        events = AuditEvent.objects.filter(action="governance.violation.confirmed").order_by("object_id")
        assert sorted(int(e.object_id) for e in events) == sorted(chosen)
        assert {e.after["review_comment"] for e in events} == {"Scores below the bar, confirmed."}
