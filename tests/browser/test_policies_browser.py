"""An admin's session in a real browser: sign in, create a policy from a template, find it in the
list, switch it off in place, edit a rule and read the version history; then the settings pages.

Screenshots of each page go to test-output/screenshots/ (policies-*.png, settings-*.png, auth-*.png).
"""

import re

import pytest

pytest.importorskip("playwright")
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from policies.models import Policy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"  # tests/conftest.py


def policy_named(name: str) -> Policy:
    with scopes_disabled():
        return Policy.objects.get(name=name)


def test_admin_creates_toggles_edits_and_reads_history(browser_page, sign_in, screenshot, alice, bob, dave):
    page = browser_page
    page.goto("/policies/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/policies/$"))
    screenshot(page, "auth-sign-in")
    sign_in(page, "alice", PASSWORD, next_path="/policies/")

    # an empty tenant says so, and offers the way forward
    expect(page.get_by_role("heading", name="No policies yet")).to_be_visible()
    expect(page.get_by_role("link", name="Policies", exact=True)).to_have_attribute("aria-current", "page")
    screenshot(page, "policies-empty")

    # New policy → category → template
    page.get_by_role("link", name="New policy").click()
    expect(page.get_by_role("heading", name="New policy", exact=True)).to_be_visible()
    screenshot(page, "policies-new-choose-category")
    page.get_by_role("link", name=re.compile("^Strict Research Assistant")).click()
    expect(page.get_by_label("Name", exact=True)).to_have_value("Strict Research Assistant")
    expect(page.get_by_label("Minimum grounding score")).to_have_value("0.8")
    expect(page.get_by_label("Minimum citations")).to_have_value("2")
    expect(page.get_by_label("Action on violation")).to_have_value("block")
    expect(page.get_by_label("Require source grounding")).to_be_checked()

    # another template from the sidebar swaps the form in place (htmx), then back
    page.get_by_role("link", name=re.compile("^Lenient RAG Agent")).click()
    expect(page.get_by_label("Name", exact=True)).to_have_value("Lenient RAG Agent")
    expect(page.get_by_label("Maximum unsupported claims")).to_have_value("3")
    expect(page).to_have_url(re.compile(r"template=lenient-rag-agent"))
    page.get_by_role("complementary").get_by_role("link", name=re.compile("^Strict Research Assistant")).click()
    expect(page.get_by_label("Name", exact=True)).to_have_value("Strict Research Assistant")

    # live validation: a bad value is flagged as it is typed, and cleared when fixed
    score = page.get_by_label("Minimum grounding score")
    # The template swap above must have settled (htmx wires the new fields up then) before typing.
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    score.fill("1.5")
    score.dispatch_event("change")
    error = page.locator("#id_rule_min_grounding_score_error")
    expect(error).to_have_text("Must be a number between 0.0 and 1.0.")
    expect(score).to_have_attribute("aria-invalid", "true")
    page.evaluate("window.scrollBy(0, -120)")
    screenshot(page, "policies-new-live-validation", full_page=False)
    score.fill("0.8")
    expect(error).to_be_empty()
    expect(score).not_to_have_attribute("aria-invalid", "true")

    page.get_by_label("Scope: agents").fill("research-agent\nresearch-*")
    screenshot(page, "policies-new-form")
    page.get_by_role("button", name="Create policy").click()

    # the detail page: effective rules, with the defaults marked
    expect(page.get_by_role("heading", name="Strict Research Assistant", level=1)).to_be_visible()
    expect(page.get_by_text("Policy “Strict Research Assistant” created.")).to_be_visible()
    policy = policy_named("Strict Research Assistant")
    assert policy.rules["min_grounding_score"] == 0.8 and policy.agents == ["research-agent", "research-*"]
    screenshot(page, "policies-detail")

    # it is in the list
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Policies").click()
    row = page.locator(f"#policy-row-{policy.pk}")
    expect(row).to_contain_text("Strict Research Assistant")
    expect(row).to_contain_text("research-agent")
    expect(row.locator(".badge-block")).to_have_text("block")
    screenshot(page, "policies-list")

    # switch it off in place: no page load, the row and a toast update
    url_before = page.url
    switch = row.get_by_role("switch")
    expect(switch).to_have_attribute("aria-checked", "true")
    switch.click()
    expect(page.locator(f"#policy-row-{policy.pk}").get_by_role("switch")).to_have_attribute("aria-checked", "false")
    expect(page.locator(".toast")).to_have_text("“Strict Research Assistant” disabled.")
    assert page.url == url_before
    assert policy_named("Strict Research Assistant").enabled is False
    expect(page.locator(f"#policy-row-{policy.pk}")).to_contain_text("disabled by alice")

    # the filters work through htmx and keep the URL shareable
    page.get_by_label("Status").select_option("true")
    expect(page.get_by_text("No policies match these filters")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/policies/\?enabled=true$"))
    page.get_by_label("Status").select_option("false")
    expect(page.locator(f"#policy-row-{policy.pk}")).to_be_visible()
    page.get_by_label("Search", exact=True).fill("nothing like it")
    expect(page.get_by_text("No policies match these filters")).to_be_visible()
    page.keyboard.press("Escape")
    page.get_by_role("link", name="Reset").click()
    expect(page.locator(f"#policy-row-{policy.pk}")).to_be_visible()

    # edit a rule
    page.locator(f"#policy-row-{policy.pk}").get_by_role("link", name="Edit").click()
    expect(page.get_by_role("heading", name="Edit “Strict Research Assistant”")).to_be_visible()
    page.get_by_label("Minimum citations").fill("3")
    screenshot(page, "policies-edit")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Saved “Strict Research Assistant” as version 3.")).to_be_visible()
    citations_row = page.locator("tr", has=page.locator("code.rule-name", has_text="min_citations"))
    expect(citations_row.locator("code.value")).to_have_text("3")
    assert policy_named("Strict Research Assistant").rules["min_citations"] == 3

    # the version history shows who changed what
    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name="Version history")).to_be_visible()
    v3 = page.locator("article", has=page.locator("#v3-title"))
    expect(v3).to_contain_text("updated")
    expect(v3).to_contain_text("by alice")
    changed = v3.locator("tr", has_text="Minimum citations")
    expect(changed.locator(".diff-old")).to_have_text("2")
    expect(changed.locator(".diff-new")).to_have_text("3")
    v2 = page.locator("article", has=page.locator("#v2-title"))
    expect(v2.locator("tr", has_text="Enabled").locator(".diff-new")).to_have_text("false")
    expect(page.locator("article", has=page.locator("#v1-title"))).to_contain_text("created")
    screenshot(page, "policies-history")

    # keyboard: "g p" goes to the policies, "/" focuses the search
    page.locator("body").press("g")
    page.locator("body").press("p")
    page.wait_for_url(re.compile(r"/policies/$"))
    page.keyboard.press("/")
    expect(page.get_by_label("Search", exact=True)).to_be_focused()
    page.keyboard.press("Escape")

    # delete with confirmation, from the list: the last one leaves the empty state
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#policy-row-{policy.pk}").get_by_role("link", name="Delete").click()
    expect(page.locator(f"#policy-row-{policy.pk}")).to_have_count(0)
    expect(page.get_by_role("heading", name="No policies yet")).to_be_visible()
    with scopes_disabled():
        assert not Policy.objects.filter(pk=policy.pk).exists()


def test_viewer_sees_no_write_controls_and_a_refused_write_is_explained(
    browser_page, sign_in, screenshot, dave, make_policy
):
    make_policy(
        name="Medical Q&A", rules={"action_on_violation": "block", "min_grounding_score": 0.9}, agents=["medical-*"]
    )
    make_policy(
        name="Lenient RAG Agent", rules={"min_grounding_score": 0.6, "max_unsupported_claims": 3}, enabled=False
    )
    page = browser_page
    sign_in(page, "dave", PASSWORD, next_path="/policies/")
    expect(page.get_by_role("link", name="Medical Q&A")).to_be_visible()
    expect(page.get_by_role("link", name="New policy")).to_have_count(0)
    expect(page.get_by_role("switch")).to_have_count(0)
    screenshot(page, "policies-list-viewer")
    page.goto("/policies/new/")
    expect(page.get_by_role("heading", name="You can't do that here")).to_be_visible()


def test_settings_pages(browser_page, sign_in, screenshot, alice, bob, dave):
    page = browser_page
    sign_in(page, "alice", PASSWORD, next_path="/settings/secrets/")
    expect(page.get_by_role("heading", name="No secrets yet")).to_be_visible()

    # a secret: set, then shown only as a masked hint
    page.get_by_label("Name", exact=True).fill("OPENAI_API_KEY")
    page.get_by_label("Value", exact=True).fill("sk-test-abcdefghijklmnop1234")
    page.get_by_role("button", name="Save secret").click()
    expect(page.get_by_text("Secret OPENAI_API_KEY saved.")).to_be_visible()
    expect(page.locator("#secret-OPENAI_API_KEY")).to_contain_text("••••1234")
    assert "sk-test-abcdefghijklmnop1234" not in page.content()
    # an error keeps the name but never the value
    page.get_by_label("Name", exact=True).fill("lower-case")
    page.get_by_label("Value", exact=True).fill("another-secret-value")
    page.get_by_role("button", name="Save secret").click()
    expect(page.locator("#id_name_error")).to_contain_text("environment-variable style name")
    expect(page.get_by_label("Value", exact=True)).to_have_value("")
    screenshot(page, "settings-secrets")

    # an API key is shown once, with a copy button
    page.get_by_role("tab", name="API keys").or_(page.get_by_role("link", name="API keys")).click()
    page.get_by_label("Name", exact=True).fill("research-agent production")
    page.get_by_role("button", name="Create key").click()
    key_field = page.get_by_label("New API key")
    expect(key_field).to_have_value(re.compile(r"^gr_"))
    page.get_by_role("button", name="Copy the API key", exact=True).click()
    expect(page.locator(".toast").first).to_be_visible()
    screenshot(page, "settings-api-keys")
    page.goto("/settings/api-keys/")
    expect(page.get_by_label("New API key")).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke").click()
    expect(page.locator("tbody tr").first).to_contain_text("Revoked")

    # members: change a role in place
    page.get_by_role("link", name="Members").click()
    bob_row = page.locator("tr", has_text="bob")
    bob_row.get_by_label("Role of bob").select_option("admin")
    expect(page.locator(".toast", has_text="bob is now admin.")).to_be_visible()
    screenshot(page, "settings-members")

    # the account menu, and the password page
    page.get_by_label("Account menu for alice").click()
    screenshot(page, "layout-account-menu", full_page=False)
    page.get_by_role("link", name="Change password").click()
    expect(page.get_by_role("heading", name="Change your password")).to_be_visible()
    screenshot(page, "auth-password-change")


@pytest.mark.screenshots
def test_dark_mode_screenshots(dark_page, sign_in, screenshot, alice, make_policy):
    make_policy(
        name="Strict Research Grounding",
        rules={"action_on_violation": "block", "min_citations": 2},
        agents=["research-agent"],
    )
    make_policy(name="Lenient Average-Based", rules={"score_eval_mode": "average", "score_relevance_floor": 0.4})
    sign_in(dark_page, "alice", PASSWORD, next_path="/policies/")
    screenshot(dark_page, "policies-list-dark")
    dark_page.goto("/policies/new/?category=grounding&template=medical-qa")
    screenshot(dark_page, "policies-new-form-dark")


def test_switching_tenant_from_the_top_bar(browser_page, sign_in, screenshot, alice, globex, make_policy):
    from tenants import services
    from tenants.audit import Actor
    from tenants.models import Role

    services.membership_set(tenant=globex, user=alice, role=Role.VIEWER, actor=Actor.system("tests"))
    make_policy(name="Acme policy")
    make_policy(name="Globex policy", tenant=globex)
    page = browser_page
    sign_in(page, "alice", PASSWORD, next_path="/policies/")
    expect(page.get_by_role("link", name="Acme policy")).to_be_visible()
    switcher = page.get_by_label("Current tenant")
    expect(switcher.locator("option")).to_have_text(["Acme Research · admin", "Globex · viewer"])
    expect(page.get_by_role("button", name="Switch")).to_be_hidden()  # JavaScript submits on change
    screenshot(page, "layout-tenant-switcher", full_page=False)
    switcher.select_option(label="Globex · viewer")
    expect(page.get_by_text("Switched to Globex.")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/policies/$"))
    expect(page.get_by_role("link", name="Globex policy")).to_be_visible()
    expect(page.get_by_role("link", name="Acme policy")).to_have_count(0)
    expect(page.get_by_role("link", name="New policy")).to_have_count(0)  # a viewer in globex
