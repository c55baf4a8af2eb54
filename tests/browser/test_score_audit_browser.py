"""The Score audit page in Chromium: the table's order and sample counts, the chart Chart.js draws from
the page's data element (gaps for empty days, a range bar per mean), choosing an agent by keyboard, and the
same numbers without JavaScript."""

from datetime import date, timedelta

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from governance.models import AgentScoreAuditDay
from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("browser-tests")


def _day(tenant, agent, reported, measured, n, day):
    AgentScoreAuditDay.objects.create(
        tenant=tenant,
        agent_name=agent,
        date=day,
        audited=n,
        sum_reported=reported * n,
        sum_measured=measured * n,
        sum_reported_sq=reported**2 * n,
        sum_measured_sq=measured**2 * n,
        sum_products=reported * measured * n,
    )


@pytest.fixture
def audited_world(live_server):
    """acme with viewer vera: an inflating agent (12 reports today, 1 three days ago), an agent with one
    wild report, an honest one; globex with an agent of its own."""
    today = date.today()
    with scopes_disabled():
        acme = tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)
        globex = tenant_services.tenant_create(slug="globex", name="Globex", actor=SYSTEM)
        vera = get_user_model().objects.create_user("vera", "vera@example.com", PASSWORD)
        tenant_services.membership_set(tenant=acme, user=vera, role=Role.VIEWER, actor=SYSTEM)
        _day(acme, "honest-agent", 0.8, 0.76, 30, today)
        _day(acme, "one-wild-report", 1.0, 0.0, 1, today)
        _day(acme, "inflating-agent", 0.95, 0.3, 12, today)
        _day(acme, "inflating-agent", 0.9, 0.2, 1, today - timedelta(days=3))
        _day(globex, "globex-agent", 0.99, 0.0, 50, today)
    return today


def _rows(page) -> list[str]:
    return page.locator("#score-audit-agents tbody tr").evaluate_all("rows => rows.map(r => r.dataset.agent)")


def test_the_table_puts_attention_first_with_counts_and_the_chart_draws_the_days(
    browser_page, sign_in, audited_world, screenshot
):
    today = audited_world
    page = browser_page
    sign_in(page, "vera", PASSWORD, next_path="/score-audit/")
    assert _rows(page) == ["inflating-agent", "one-wild-report", "honest-agent"]
    first = page.locator("#score-audit-agents tbody tr").first
    expect(first.locator("td").nth(1)).to_have_text("Needs attention")
    # Reported and measured over both days: 13 reports.
    expect(first.locator("td").nth(2)).to_have_text("0.95 (n=13)")
    expect(first.locator("td").nth(3)).to_have_text("0.29 (n=13)")
    wild = page.locator('#score-audit-agents tr[data-agent="one-wild-report"]')
    expect(wild.locator("td").nth(1)).to_have_text("Too few to judge")
    expect(wild.locator("td").nth(2)).to_have_text("1.00 (n=1)")
    expect(page.get_by_text("globex-agent")).to_have_count(0)

    expect(page.get_by_role("heading", name="inflating-agent: reported and measured per day")).to_be_visible()
    drawn = page.evaluate(
        """() => {
        const chart = Chart.getChart(document.querySelector("canvas[data-score-chart]"));
        const line = (label) => chart.data.datasets.find((d) => d.label === label);
        return {
            labels: chart.data.labels,
            datasets: chart.data.datasets.length,
            measured: line("Measured").data,
            measuredRange: line("Measured range").data,
            hollow: line("Measured").pointBackgroundColor,
        };
    }"""
    )
    data = page.evaluate('() => JSON.parse(document.getElementById("score-audit-chart").textContent)')
    assert len(drawn["labels"]) == 30 and drawn["labels"][-1] == today.isoformat()
    assert drawn["datasets"] == 4
    assert drawn["measuredRange"][-1] == [data["measured_low"][-1], data["measured_high"][-1]]
    assert drawn["measuredRange"][-2] is None
    assert drawn["measured"] == data["measured"]
    assert drawn["measured"][-4:] == [0.2, None, None, 0.3]  # empty days are gaps, not zeros
    assert data["samples"][-4:] == [1, 0, 0, 12]
    assert drawn["hollow"][-4] == "transparent" and drawn["hollow"][-1] != "transparent"
    assert data["measured_high"][-4] - data["measured_low"][-4] > data["measured_high"][-1] - data["measured_low"][-1]
    screenshot(page, "score-audit")


def test_an_agent_is_chosen_by_keyboard_from_the_table(browser_page, sign_in, audited_world):
    page = browser_page
    sign_in(page, "vera", PASSWORD, next_path="/score-audit/")
    link = page.get_by_role("link", name="honest-agent", exact=True)
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**agent=honest-agent**")
    expect(page.get_by_role("heading", name="honest-agent: reported and measured per day")).to_be_visible()
    assert page.locator('#score-audit-agents tr[aria-current="true"]').get_attribute("data-agent") == "honest-agent"
    page.get_by_text("Show the numbers as a table").click()
    today_row = page.locator(f'#score-audit-days-table tr[data-date="{audited_world.isoformat()}"]')
    expect(today_row.locator("td").nth(1)).to_have_text("0.80 (n=30)")


def test_without_javascript_the_same_numbers_are_readable(chromium, live_server, audited_world):
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/score-audit/")
    page.get_by_label("Username").fill("vera")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/score-audit/")
    assert _rows(page) == ["inflating-agent", "one-wild-report", "honest-agent"]
    page.get_by_text("Show the numbers as a table").click()
    empty = page.locator(f'#score-audit-days-table tr[data-date="{(audited_world - timedelta(days=1)).isoformat()}"]')
    expect(empty).to_contain_text("no samples")
    response = page.goto("/score-audit/?days=400")  # the field's max= stops the form; a link cannot be stopped
    assert response is not None and response.status == 400
    expect(page.get_by_role("alert")).to_contain_text("days:")
    context.close()


def test_in_dark_mode_the_chart_takes_the_themes_text_colour(chromium, live_server, audited_world, sign_in):
    colours = {}
    for scheme in ("light", "dark"):
        context = chromium.new_context(base_url=live_server.url, color_scheme=scheme)
        page = context.new_page()
        sign_in(page, "vera", PASSWORD, next_path="/score-audit/")
        colours[scheme] = page.evaluate(
            """() => {
            const chart = Chart.getChart(document.querySelector("canvas[data-score-chart]"));
            const theme = getComputedStyle(document.documentElement).getPropertyValue("--gr-chart-text").trim();
            return [chart.options.scales.y.ticks.color, theme];
        }"""
        )
        context.close()
    assert colours["light"][0] == colours["light"][1] and colours["dark"][0] == colours["dark"][1]
    assert colours["light"][0] != colours["dark"][0]
