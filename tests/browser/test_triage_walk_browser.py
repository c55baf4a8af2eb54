"""The triage pages walked in Chromium as a reviewer works them: a sort chosen from a header survives
the next filter, the runs list stays one line a run, and without JavaScript the review queue does not
advertise keys that do nothing."""

import re
from datetime import timedelta

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django.utils import timezone
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from governance import services
from governance.models import Run
from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")
STRICT = {"min_grounding_score": 0.7, "min_citations": 1, "action_on_violation": "block"}


@pytest.fixture
def queue(live_server):
    """Six runs of two agents with long names, half of them blocked."""
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        bob = get_user_model().objects.create_user("bob", "bob@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=bob, role=Role.REVIEWER, actor=SYSTEM)
        policy_services.policy_create(
            tenant=acme, actor=SYSTEM, name="Strict", category="grounding", rules=STRICT, scope={"agents": []}
        )
        for n, score in enumerate((0.9, 0.3, 0.6, 0.45, 0.95, 0.2)):
            agent = "medical-assistant-long-name" if n % 2 else "research-agent-long-name"
            run, _ = services.run_start(tenant=acme, agent_name=agent, workflow_name="answer-the-question")
            services.run_record_grounding(tenant=acme, run_id=run.pk, grounding_scores=[score], citations=["a"])
            services.run_complete(tenant=acme, run_id=run.pk, output="done")
            Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(minutes=10 - n))
    return acme


def _column(page, name: str) -> list[str]:
    return page.locator(f'#run-results td[data-col="{name}"]').all_inner_texts()


def test_a_filter_typed_after_a_header_click_keeps_that_sort(browser_page, sign_in, queue):
    page = browser_page
    sign_in(page, "bob", PASSWORD, next_path="/runs/")
    page.get_by_role("link", name="Worst score").click()
    expect(page).to_have_url(re.compile(r"sort=score"))
    page.get_by_label("Agent").fill("medical-assistant-long-name")
    expect(page).to_have_url(re.compile(r"agent=medical-assistant-long-name"))
    expect(page).to_have_url(re.compile(r"sort=score"))
    expect(page.locator('th[data-sort="score"]')).to_have_attribute("aria-sort", "ascending")
    assert _column(page, "score") == ["0.20", "0.30", "0.45"]
    # And the select filters, submitted with the button, keep it too.
    page.get_by_role("link", name="Worst score").click()
    expect(page.locator('th[data-sort="score"]')).to_have_attribute("aria-sort", "descending")
    page.get_by_label("Final action").select_option("block")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(re.compile(r"final_action=block"))
    expect(page).to_have_url(re.compile(r"sort=-score"))
    assert _column(page, "score") == ["0.45", "0.30", "0.20"]


def test_each_run_is_one_line(browser_page, sign_in, queue):
    page = browser_page
    sign_in(page, "bob", PASSWORD, next_path="/runs/")
    rows = page.locator("#run-results tbody tr")
    expect(rows).to_have_count(6)
    line = page.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('#run-results td[data-col=agent]')).lineHeight)"
    )
    for height in page.evaluate(
        "() => [...document.querySelectorAll('#run-results tbody tr')].map(r => r.getBoundingClientRect().height)"
    ):
        assert height < 2 * line, f"a run's row is {height}px, more than one {line}px line"


def test_without_javascript_the_queue_offers_its_buttons_not_its_keys(chromium, live_server, queue):
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1360, "height": 900}, java_script_enabled=False
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        page.goto("/accounts/login/?next=/violations/")
        page.get_by_label("Username").fill("bob")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(re.compile(r"/violations/$"))
        expect(page.get_by_role("button", name="Confirm selected")).to_be_visible()
        expect(page.locator(".gr-kbd-hint")).to_be_hidden()
    finally:
        context.close()


def test_with_javascript_the_queue_shows_its_keys(browser_page, sign_in, queue):
    page = browser_page
    sign_in(page, "bob", PASSWORD, next_path="/violations/")
    expect(page.locator(".gr-kbd-hint")).to_be_visible()
    expect(page.locator(".gr-kbd-hint")).to_contain_text("c confirm")
