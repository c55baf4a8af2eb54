"""A reviewer's day in a real browser: an agent is blocked, the reviewer finds the violation,
confirms it, sees the review on the run, and exports the audit log.

The agent runs through the SDK (client/) against the live server. Screenshots of every page this
half of the dashboard owns go to test-output/screenshots/. Chromium, the page (which fails the test
on any JavaScript error), sign-in and screenshots come from tests/browser/conftest.py.
"""

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from policies import services as policy_services
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")

STRICT = {
    "require_source_grounding": True,
    "min_grounding_score": 0.7,
    "min_citations": 1,
    "max_unsupported_claims": 0,
    "abstention_threshold": 0.5,
    "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
    "action_on_violation": "block",
}


@pytest.fixture
def reviewer_world(live_server):
    """Tenant acme with alice (admin), a blocking research policy and an API key for the agent."""
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        alice = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=alice, role=Role.ADMIN, actor=SYSTEM)
        policy_services.policy_create(
            tenant=acme,
            actor=SYSTEM,
            name="Strict Research Grounding",
            category="grounding",
            rules=STRICT,
            scope={"agents": ["research-*"]},
            enabled=True,
        )
        _, key = tenant_services.api_key_create(tenant=acme, name="agent", actor=SYSTEM)
    return {"url": live_server.url, "key": key}


def _run_agent(url: str, key: str, *, scores, citations, agent="research-agent") -> int:
    """One research run through the SDK: retrieval, an LLM call, one grounding report."""
    import groundrule

    with groundrule.Client(base_url=url, api_key=key, max_retries=0) as client:
        with client.run(
            agent_name=agent,
            workflow_name="answer-question",
            input={"question": "When was the Eiffel Tower built?"},
            enforce_policy=False,
        ) as run:
            t0 = datetime.now(UTC)
            run.record_span(
                "retrieval",
                "vector_search",
                input={"query": "Eiffel Tower construction", "k": 5},
                output={"hits": 5},
                started_at=t0,
                ended_at=t0 + timedelta(milliseconds=45),
            )
            run.record_tool_call(
                "source_retrieval",
                input={"query": "Eiffel Tower construction"},
                output={"sources_found": 2},
                started_at=t0 + timedelta(milliseconds=50),
                ended_at=t0 + timedelta(milliseconds=140),
            )
            run.record_llm_call(
                "gpt-4o-mini",
                prompt="When was the Eiffel Tower built?",
                response="It was built in 1989 by Gustave Eiffel.",
                prompt_tokens=812,
                completion_tokens=24,
                started_at=t0 + timedelta(milliseconds=145),
                ended_at=t0 + timedelta(milliseconds=190),
            )
            run.record_grounding(
                grounding_scores=list(scores),
                citations=list(citations),
                unsupported_claims=["It was built in 1989"] if not citations else [],
                output_confidence=0.41 if not citations else 0.9,
                output="It was built in 1989 by Gustave Eiffel.",
                sources=[
                    {"id": "wiki/eiffel", "text": "The Eiffel Tower was built from 1887 to 1889.", "score": 0.83},
                    {"id": "wiki/paris", "text": "Paris is the capital of France.", "score": 0.31},
                ],
            )
            run.set_result({"answer": "It was built in 1989."}, output="It was built in 1989 by Gustave Eiffel.")
        return run.id


def _signed_in(page, sign_in, next_path: str) -> None:
    sign_in(page, "alice", PASSWORD, next_path=next_path)
    page.wait_for_load_state("load")  # htmx (a deferred script) is listening from here on


def test_reviewer_confirms_a_blocked_run_and_exports_the_audit_log(browser_page, sign_in, screenshot, reviewer_world):
    page, base = browser_page, reviewer_world["url"]
    _run_agent(base, reviewer_world["key"], scores=[0.95, 0.9], citations=["wiki/eiffel"])  # a clean run
    blocked_id = _run_agent(base, reviewer_world["key"], scores=[0.91, 0.42], citations=[])

    _signed_in(page, sign_in, "/violations/")
    expect(page.get_by_role("heading", name="Violations", level=1)).to_be_visible()

    # Only blocks, through the htmx filter; the blocked run's violations are listed.
    page.get_by_label("Action").select_option("block")
    expect(page).to_have_url(re.compile(r"action=block"))
    rows = page.locator("#violation-results tbody tr")
    expect(rows).to_have_count(2)  # mid_execution score block and after_workflow audit block
    expect(rows.first).to_contain_text("research-agent")
    expect(page.locator("#violation-results")).to_contain_text(f"#{blocked_id}")
    screenshot(page, "violations")

    # Open the after_workflow block (newest) and confirm it with a comment.
    page.get_by_role("link", name=re.compile(r"Violation \d+: block by Strict Research Grounding")).first.click()
    expect(page.get_by_role("heading", name=re.compile(r"Violation #\d+"))).to_be_visible()
    violation_id = int(re.search(r"/violations/(\d+)/", page.url).group(1))
    expect(page.locator("main")).to_contain_text("Citations (0) below minimum (1)")
    page.get_by_label(re.compile("Comment")).fill("Fabricated date: the sources say 1889.")
    page.get_by_role("button", name="Confirm violation").click()
    panel = page.locator("#review-panel")
    expect(panel).to_contain_text("Marked confirmed")
    expect(panel).to_contain_text("by alice")
    expect(panel).to_contain_text("Fabricated date: the sources say 1889.")
    screenshot(page, "violation-detail")

    # The run page shows the review on its Governance tab.
    page.get_by_role("link", name=f"Run #{blocked_id}", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile(rf"Run #{blocked_id}"))).to_be_visible()
    card = page.locator(f"#evaluation-{violation_id}")
    expect(card).to_contain_text("confirmed")
    expect(card).to_contain_text("by alice")
    expect(card).to_contain_text("Fabricated date: the sources say 1889.")
    screenshot(page, "run-governance")

    # The Trace tab swaps in over htmx and updates the address.
    page.get_by_role("link", name="Trace", exact=True).click()
    expect(page).to_have_url(re.compile(r"tab=trace"))
    expect(page.locator("#run-tabs")).to_contain_text("source_retrieval")
    expect(page.locator("#run-tabs")).to_contain_text("Grounding report 1")
    screenshot(page, "run-trace")

    # Runs list and overview.
    page.get_by_role("link", name="Runs", exact=True).first.click()
    expect(page.get_by_role("heading", name="Runs", level=1)).to_be_visible()
    expect(page.locator("#run-results tbody tr")).to_have_count(2)
    screenshot(page, "runs")
    page.goto(f"{base}/?period=7d")
    expect(page.locator("#overview-evaluations .gr-stat--block .gr-stat-value")).to_have_text("2")
    expect(page.locator("#overview-runs .gr-stat--block .gr-stat-value")).to_have_text("1")
    page.wait_for_function("() => window.Chart && Object.keys(window.Chart.instances).length > 0")
    page.wait_for_timeout(600)  # let the chart's entry animation finish before the screenshot
    screenshot(page, "overview")

    # Audit log: the confirmation is there, and the CSV export downloads it.
    page.goto(f"{base}/audit/")
    expect(page.locator("#audit-results")).to_contain_text("governance.violation.confirmed")
    screenshot(page, "audit")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export CSV").click()
    download = download_info.value
    assert re.match(r"audit-log-\d{8}T\d{6}Z\.csv", download.suggested_filename)
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    confirmed = [r for r in rows if r["action"] == "governance.violation.confirmed"]
    assert len(confirmed) == 1
    assert confirmed[0]["actor"] == "alice" and confirmed[0]["object_id"] == str(violation_id)
    assert "Fabricated date: the sources say 1889." in confirmed[0]["after"]


def test_reading_works_with_javascript_off(chromium, sign_in, reviewer_world):
    base = reviewer_world["url"]
    blocked_id = _run_agent(base, reviewer_world["key"], scores=[0.91, 0.42], citations=[])
    context = chromium.new_context(base_url=base, viewport={"width": 1360, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        sign_in(page, "alice", PASSWORD, next_path="/violations/")
        # Filters are a plain GET form; the Apply button submits it.
        page.get_by_label("Phase").select_option("mid_execution")
        page.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"phase=mid_execution"))
        expect(page.locator("#violation-results tbody tr")).to_have_count(1)
        # Tabs are links: the Trace tab loads as a page of its own.
        page.goto(f"{base}/runs/{blocked_id}/")
        page.get_by_role("link", name="Trace", exact=True).click()
        expect(page).to_have_url(re.compile(r"\?tab=trace"))
        expect(page.locator("#run-tabs")).to_contain_text("Grounding report 1")
        # The overview's numbers are in the table even without the chart.
        page.goto(f"{base}/")
        page.get_by_text("Show the violations as a table").click()
        expect(page.locator("#overview-evaluations-table")).to_be_visible()
        expect(page.locator("#overview-evaluations .gr-stat--block .gr-stat-value")).to_have_text("2")
    finally:
        context.close()
