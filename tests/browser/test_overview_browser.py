"""The overview in Chromium: two charts of stacked bars, each counting one thing (a run once by its final
action; each violating evaluation), whose drawn data equal the numbers beside them and in the tables;
and an empty workspace, which shows how to connect its first agent and makes a key with a ready snippet.
"""

import re

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import bulk_violations
from playwright.sync_api import expect

from governance.models import Run
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import ApiKey, Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")


def _workspace(role=Role.ADMIN):
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        user = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=user, role=role, actor=SYSTEM)
    return acme


@pytest.fixture
def busy(live_server):
    """Six runs in the last hours: 3 allowed, 1 warned (2 warning evaluations), 2 blocked (3 blocking
    evaluations each): 6 runs, 2 warnings and 6 blocks."""
    acme = _workspace()
    start = timezone.now() - timezone.timedelta(hours=3)
    with scopes_disabled():
        for n, (action, evaluations) in enumerate(
            [("allow", ()), ("allow", ()), ("allow", ()), ("warn", ("warn",) * 2), ("block", ("block",) * 3)]
            + [("block", ("block",) * 3)]
        ):
            run = Run.objects.create(tenant=acme, agent_name=f"agent-{n}", final_action=action, started_at=start)
            if evaluations:
                bulk_violations(acme, count=len(evaluations), run=run, actions=evaluations, start=start)
    return acme


def _drawn(page, canvas: str) -> dict:
    page.wait_for_function(f"() => window.Chart && window.Chart.getChart('{canvas}')")
    return page.evaluate(
        """(id) => {
            const chart = window.Chart.getChart(id);
            return {
              type: chart.config.type,
              stacked: [chart.options.scales.x.stacked, chart.options.scales.y.stacked],
              series: chart.data.datasets.map((d) => [d.label, d.data.reduce((a, b) => a + b, 0), d.type || null]),
            };
        }""",
        canvas,
    )


def _stat(page, section: str, label: str) -> int:
    card = page.locator(f"#overview-{section} .gr-stat").filter(has_text=re.compile(rf"^{label}\d"))
    return int(card.locator(".gr-stat-value").inner_text())


def test_each_chart_draws_stacked_bars_whose_sums_are_the_numbers_beside_it(browser_page, sign_in, screenshot, busy):
    page = browser_page
    sign_in(page, "alice", PASSWORD, next_path="/")
    runs = _drawn(page, "overview-runs-chart")
    assert runs == {
        "type": "bar",
        "stacked": [True, True],
        "series": [["Allowed runs", 3, None], ["Warned runs", 1, None], ["Blocked runs", 2, None]],
    }
    assert [_stat(page, "runs", label) for label in ("Runs", "Allowed runs", "Warned runs", "Blocked runs")] == [
        6,
        3,
        1,
        2,
    ]
    evaluations = _drawn(page, "overview-evaluations-chart")
    assert evaluations["type"] == "bar" and evaluations["stacked"] == [True, True]
    assert evaluations["series"] == [["Warning evaluations", 2, None], ["Blocking evaluations", 6, None]]
    assert [_stat(page, "evaluations", label) for label in ("Violations", "Warnings", "Blocks")] == [8, 2, 6]
    page.wait_for_timeout(400)  # the bars' entry animation, before the picture
    screenshot(page, "overview-charts")

    # The table under each chart says the same, its last row the totals.
    page.get_by_text("Show the runs as a table").click()
    expect(page.locator("#overview-runs-table tfoot td")).to_have_text(["3", "1", "2", "6"])
    page.get_by_text("Show the violations as a table").click()
    expect(page.locator("#overview-evaluations-table tfoot td")).to_have_text(["2", "6"])

    # Another period over htmx redraws both charts with the same counts (all six runs are recent).
    page.get_by_role("link", name="7d").click()
    expect(page).to_have_url(re.compile(r"period=7d"))
    page.wait_for_function(
        "() => { const chart = window.Chart.getChart('overview-runs-chart');"
        " return chart && chart.data.labels.length === 8; }"
    )
    assert _drawn(page, "overview-runs-chart")["series"] == runs["series"]


def test_an_empty_workspace_shows_how_to_connect_and_its_button_makes_a_key_with_the_snippet(
    browser_page, sign_in, screenshot, live_server
):
    _workspace()
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, "alice", PASSWORD, next_path="/")
    expect(page.get_by_role("heading", name="Connect your first agent")).to_be_visible()
    expect(page.locator("#snippet-sdk-setup")).to_have_text(
        f"pip install ./client\nexport GROUNDRULE_URL={live_server.url}\nexport GROUNDRULE_API_KEY=gr_YOUR_KEY"
    )
    expect(page.locator("#snippet-otlp")).to_contain_text(
        f"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={live_server.url}/v1/traces"
    )
    expect(page.locator("#snippet-sdk-run")).to_contain_text(
        'with groundrule.Client().run(agent_name="my-agent") as run:'
    )
    assert page.locator("canvas").count() == 0
    screenshot(page, "overview-connect")

    # Reached from the keyboard, as every other button.
    button = page.get_by_role("button", name="Create an API key")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Your new key “First agent”")).to_be_visible()
    key = page.locator("#new-key-value").input_value()
    assert key.startswith("gr_")
    with scopes_disabled():
        assert ApiKey.objects.get().scope == "agent"
    expect(page.locator("#snippet-sdk-setup")).to_contain_text(f"export GROUNDRULE_API_KEY={key}")
    expect(page.locator("#snippet-otlp")).to_contain_text(f"Authorization=Bearer%20{key}")
    screenshot(page, "api-key-new-with-snippet")

    # The snippet's copy button copies the snippet as shown.
    page.get_by_role("button", name="Copy the SDK setup commands").click()
    expect(page.get_by_role("button", name="Copy the SDK setup commands")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == page.locator("#snippet-sdk-setup").inner_text()

    # Shown once: the keys page, reloaded, has neither the key nor its snippet.
    page.goto("/settings/api-keys/")
    expect(page.get_by_role("heading", name="Keys", exact=True)).to_be_visible()
    assert key not in page.content() and page.locator("[data-snippet]").count() == 0


def test_a_viewer_of_an_empty_workspace_reads_the_snippets_without_javascript_and_no_key_button(
    chromium, sign_in, live_server
):
    _workspace(role=Role.VIEWER)
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        sign_in(page, "alice", PASSWORD, next_path="/")
        expect(page.get_by_role("heading", name="Connect your first agent")).to_be_visible()
        expect(page.locator("#snippet-sdk-setup")).to_contain_text(f"export GROUNDRULE_URL={live_server.url}")
        expect(page.get_by_text("Ask an admin of this workspace")).to_be_visible()
        assert page.get_by_role("button", name="Create an API key").count() == 0
    finally:
        context.close()
