"""Two-factor authentication in Chromium: a person sets up an authenticator app from the account
security page (typing the key shown, as someone without a camera would), keeps the recovery codes,
signs out, and signs back in with a code; a workspace that requires it keeps a member on enrolment,
without JavaScript."""

import re
import time

import pyotp
import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect
from two_factor_support import leave_browser_unconfirmed

from tenants import authenticator, two_factor
from tenants.audit import Actor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


@pytest.fixture
def no_js_page(chromium, live_server):
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def sign_out(page):
    page.get_by_label("Account menu for alice").click()
    page.get_by_role("button", name="Sign out").click()


def test_enrol_sign_out_and_sign_in_with_a_code(browser_page, sign_in, screenshot, alice):
    page = browser_page
    sign_in(page, "alice", PASSWORD)
    page.get_by_label("Account menu for alice").click()
    page.get_by_role("link", name="Account security").click()
    page.get_by_role("button", name="Set up an authenticator app").click()

    expect(page.get_by_role("heading", name="Set up an authenticator app")).to_be_visible()
    expect(page.get_by_role("img", name="QR code for your authenticator app")).to_be_visible()
    shown = page.get_by_test_id("totp-secret").inner_text()
    screenshot(page, "two-factor-setup")
    assert re.fullmatch(r"([A-Z2-7]{4} ){7}[A-Z2-7]{4}", shown)
    totp = pyotp.TOTP(shown.replace(" ", ""))
    page.get_by_label("Authenticator code").fill(totp.now())
    page.get_by_role("button", name="Turn on two-factor authentication").click()

    expect(page.get_by_role("heading", name="Two-factor authentication is on")).to_be_visible()
    codes = page.get_by_test_id("recovery-codes").locator("li")
    expect(codes).to_have_count(10)
    assert all(re.fullmatch(r"[0-9a-z]{5}-[0-9a-z]{5}", c) for c in codes.all_inner_texts())
    screenshot(page, "two-factor-recovery-codes")
    page.get_by_role("link", name="I have saved them").click()
    expect(page.get_by_test_id("two-factor-section")).to_contain_text("On")
    screenshot(page, "two-factor-security")
    expect(page.get_by_test_id("recovery-codes-left")).to_have_text("10 unused recovery codes left.")
    assert shown not in page.content()

    sign_out(page)
    page.goto("/runs/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/accounts/two-factor/")
    expect(page.get_by_role("heading", name="Two-factor authentication")).to_be_visible()

    # A wrong code first: refused beside the field, still not signed in.
    wrong = str((int(totp.now()) + 500_000) % 1_000_000).zfill(6)
    page.get_by_label("Authenticator code").fill(wrong)
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#id_code_error")).to_contain_text("That code is not right")
    screenshot(page, "two-factor-sign-in")

    page.get_by_label("Authenticator code").fill(totp.at(time.time() + 30))  # the next code: this one was used
    page.get_by_role("button", name="Verify").click()
    page.wait_for_url("**/runs/")
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()


def test_a_recovery_code_signs_in_without_javascript(no_js_page, alice):
    secret = authenticator.secret_of(authenticator.totp_begin(user=alice))
    codes = authenticator.totp_confirm(user=alice, code=pyotp.TOTP(secret).now())
    page = no_js_page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Use a recovery code").click()  # a <details>: opens without JavaScript
    page.get_by_label("Recovery code").fill(codes[0])
    page.get_by_role("button", name="Sign in with a recovery code").click()
    expect(page.get_by_role("status")).to_contain_text("You signed in with a recovery code; 9 left.")
    assert two_factor.enrolled_methods(alice) == [two_factor.TOTP, two_factor.RECOVERY_CODE]


def test_a_workspace_that_requires_it_keeps_a_member_on_enrolment(no_js_page, sign_in, acme, alice):
    authenticator.tenant_set_require_two_factor(tenant=acme, required=True, actor=Actor.system("tests"))
    page = no_js_page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/account/security/")
    expect(page.get_by_test_id("two-factor-required")).to_contain_text(
        "Acme Research requires two-factor authentication."
    )
    for path in ("/runs/", "/policies/", "/settings/members/"):
        page.goto(path)
        page.wait_for_url("**/account/security/")
    page.get_by_role("button", name="Set up an authenticator app").click()
    secret = page.get_by_test_id("totp-secret").inner_text().replace(" ", "")
    page.get_by_label("Authenticator code").fill(pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Turn on two-factor authentication").click()
    page.get_by_role("link", name="I have saved them").click()
    page.goto("/runs/")
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()


def test_past_the_window_setting_up_the_app_confirms_first_without_javascript(no_js_page, alice):
    # docs/two-factor.md, "Confirm it's you": a screen left signed in cannot add an app unasked.
    page = no_js_page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto("/account/security/")
    leave_browser_unconfirmed(page)
    page.get_by_role("button", name="Set up an authenticator app").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Confirm it's you")
    expect(page.locator("main")).to_contain_text("To set up an authenticator app, confirm it is you")
    assert authenticator.pending_device(alice) is None
    page.get_by_label("Authenticator code or your password").fill("not-my-password")
    page.get_by_role("button", name="Confirm").click()
    expect(page.locator("main")).to_contain_text("That is neither a current authenticator code nor your password.")
    assert authenticator.pending_device(alice) is None
    page.get_by_label("Authenticator code or your password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_role("heading", name="Set up an authenticator app")).to_be_visible()
    secret = page.get_by_test_id("totp-secret").inner_text().replace(" ", "")
    page.get_by_label("Authenticator code").fill(pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Turn on two-factor authentication").click()
    expect(page.get_by_test_id("recovery-codes").locator("li")).to_have_count(10)
    assert two_factor.has_second_factor(alice)
