"""A long run's Governance tab in Chromium: a page of evaluations at a time over htmx and without
JavaScript, the place kept when switching to the Trace tab and back."""

import re

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django.test import Client
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from governance import services
from governance.models import Decision, Evaluation, GroundingReport, Run
from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")
RULES = {"min_grounding_score": 0.5, "min_citations": 1, "action_on_violation": "warn"}


@pytest.fixture
def long_run(live_server):
    """Two policies and 40 reports (one sent, 39 bulk-written) before the run completes: 80
    evaluations at mid_execution and 2 at after_workflow, two pages."""
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        bob = get_user_model().objects.create_user("bob", "bob@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=bob, role=Role.REVIEWER, actor=SYSTEM)
        for name in ("Grounding", "Citations"):
            policy_services.policy_create(
                tenant=acme, actor=SYSTEM, name=name, category="grounding", rules=RULES, scope={"agents": []}
            )
        run, _ = services.run_start(tenant=acme, agent_name="long-agent")
        services.run_record_grounding(tenant=acme, run_id=run.pk, grounding_scores=[0.9], citations=["a"])
        reports = GroundingReport.objects.bulk_create(
            GroundingReport(tenant=acme, run=run, seq=seq, grounding_scores=[0.9], citations=["a"])
            for seq in range(2, 41)
        )
        decisions = Decision.objects.bulk_create(
            Decision(tenant=acme, run=run, report=r, phase="mid_execution", action="allow", reason=f"said on {r.seq}")
            for r in reports
        )
        Evaluation.objects.bulk_create(
            Evaluation(
                tenant=acme,
                run=run,
                decision=d,
                policy_name=name,
                category="grounding",
                agent_name="long-agent",
                phase="mid_execution",
                action="allow",
                reason=d.reason,
            )
            for d in decisions
            for name in ("Grounding", "Citations")
        )
        Run.objects.filter(pk=run.pk).update(report_count=40)
        services.run_complete(tenant=acme, run_id=run.pk, output="done")
    return run.pk


def rows(page) -> list[str]:
    return page.locator("table.gr-gov-table tr.gr-eval").evaluate_all("rows => rows.map(r => r.id)")


def test_evaluations_come_a_page_at_a_time_and_the_tabs_keep_the_place(browser_page, sign_in, long_run):
    page = browser_page
    sign_in(page, "bob", PASSWORD, next_path=f"/runs/{long_run}/")
    first = rows(page)
    assert len(first) == 50
    expect(page.locator("#phase-before_workflow")).to_contain_text("2 policies stored their rules")
    expect(page.get_by_text("50 of 82 evaluations on this page").first).to_be_visible()
    # Over htmx: the next page replaces the tab, the address says which, the table's top is in view.
    page.get_by_role("link", name="Show more evaluations").click()
    expect(page.locator("tr.gr-eval")).to_have_count(32)
    second = rows(page)
    assert not set(second) & set(first)
    expect(page).to_have_url(re.compile(r"\?tab=governance&evaluations=\d+$"))
    expect(page.locator("#evaluations")).to_be_in_viewport()
    expect(page.locator("#phase-mid_execution")).to_contain_text("continued from the page before")
    expect(page.locator("#phase-after_workflow")).to_be_visible()
    # To the Trace tab and back: the Governance tab opens on the same page.
    page.get_by_role("link", name="Trace", exact=True).click()
    expect(page).to_have_url(re.compile(r"\?tab=trace&evaluations=\d+$"))
    expect(page.locator("li.gr-tl--report")).to_have_count(20)
    page.get_by_role("link", name="Governance", exact=True).click()
    expect(page.locator("tr.gr-eval")).to_have_count(32)
    assert rows(page) == second
    page.get_by_role("link", name="Earlier evaluations").click()
    expect(page.locator("tr.gr-eval")).to_have_count(50)
    assert rows(page) == first


def test_evaluation_pages_without_javascript(chromium, live_server, long_run):
    client = Client()
    client.login(username="bob", password=PASSWORD)
    host = live_server.url.split("//")[1].split(":")[0]
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "domain": host, "path": "/"}]
    )
    page = context.new_page()
    page.goto(f"/runs/{long_run}/")
    first = rows(page)
    page.get_by_role("link", name="Show more evaluations").click()
    assert len(rows(page)) == 32 and page.url.endswith("#evaluations")
    page.get_by_role("link", name="Earlier evaluations").click()
    assert rows(page) == first
    context.close()
