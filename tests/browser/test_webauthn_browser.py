"""Security keys in Chromium with its virtual authenticator (the DevTools WebAuthn domain): a person
adds a key on the account security page, signs out, signs in with the password and then the key, and
lands on the dashboard; a key they removed is refused on the second step.

WebAuthn needs a secure context and a relying party ID that is a domain name: the live server is
reached as http://localhost, which browsers treat as secure, not as 127.0.0.1.
"""

import re
from urllib.parse import urlsplit

import pytest

pytest.importorskip("playwright")
from django.test import Client
from playwright.sync_api import expect
from two_factor_support import leave_browser_unconfirmed
from webauthn_authenticator import SoftAuthenticator

from tenants.models import WebAuthnCredential

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


@pytest.fixture
def key_page(chromium, live_server):
    """A page on http://localhost:PORT with a virtual USB security key plugged in."""
    context = chromium.new_context(
        base_url=live_server.url.replace("127.0.0.1", "localhost"), viewport={"width": 1360, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "usb",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
            }
        },
    )
    page.on("dialog", lambda dialog: dialog.accept())  # any data-confirm question
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def path_of(page) -> str:
    return urlsplit(page.url).path


def password_step(page, username="alice"):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def on_second_step(page):
    # The second step's page: the key's own, or the one every second factor shares (which includes
    # account/_webauthn_sign_in.html, the same button).
    page.wait_for_url(lambda url: urlsplit(url).path.startswith("/accounts/two-factor/"))
    expect(page.get_by_role("button", name="Use your security key")).to_be_visible()


def sign_out(page, username="alice"):
    page.get_by_label(f"Account menu for {username}").click()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/accounts/login/")


def section(page):
    # The security page has other sections (the authenticator app, sessions) with fields of their own.
    return page.locator("#security-keys")


def add_key(page, name):
    page.goto("/account/security/")
    section(page).get_by_label("Name").fill(name)
    section(page).get_by_role("button", name="Add a security key").click()
    expect(page.locator(".messages")).to_contain_text(f"Security key “{name}” added.")
    # A first second factor comes with its recovery codes, shown once before the security page.
    expect(page.get_by_test_id("recovery-codes").locator("li")).to_have_count(10)
    page.get_by_role("link", name="I have saved them").click()
    page.wait_for_url(lambda url: urlsplit(url).path == "/account/security/")


def test_a_key_added_on_the_security_page_signs_in_after_the_password(key_page, alice, screenshot):
    page = key_page
    password_step(page)
    page.wait_for_url(lambda url: urlsplit(url).path == "/")

    add_key(page, "Blue key")
    expect(section(page).get_by_text("needs JavaScript")).to_be_hidden()
    row = section(page).get_by_role("row", name=re.compile("Blue key"))
    expect(row).to_contain_text("Never")
    expect(page.locator("#webauthn-keys tbody tr")).to_have_count(1)
    screenshot(page, "security-keys")
    key = WebAuthnCredential.objects.get(user=alice)
    assert key.name == "Blue key" and key.sign_count >= 0

    sign_out(page)
    password_step(page)
    on_second_step(page)
    screenshot(page, "security-key-sign-in")
    page.get_by_role("button", name="Use your security key").click()
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()

    page.goto("/account/security/")
    expect(page.get_by_role("row", name=re.compile("Blue key"))).not_to_contain_text("Never")
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_a_name_is_asked_for_before_the_key_is(key_page, alice):
    page = key_page
    password_step(page)
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
    page.goto("/account/security/")
    section(page).get_by_role("button", name="Add a security key").click()
    expect(page.locator("#webauthn-add-error")).to_have_text("Give the key a name, so you can tell your keys apart.")
    expect(section(page).get_by_label("Name")).to_be_focused()
    assert not WebAuthnCredential.objects.exists()


def confirm_its_you(page, what: str) -> None:
    """Past REAUTHENTICATE_MINUTES a change to second factors asks for a code or the password first
    (docs/two-factor.md, "Confirm it's you")."""
    expect(page.get_by_role("heading", level=1)).to_have_text("Confirm it's you")
    expect(page.locator("main")).to_contain_text(f"To {what}, confirm it is you")
    page.get_by_label("Authenticator code or your password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm").click()


def test_adding_a_key_past_the_window_confirms_first_then_adds_it(key_page, alice):
    page = key_page
    password_step(page)
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
    page.goto("/account/security/")
    leave_browser_unconfirmed(page)
    section(page).get_by_label("Name").fill("Blue key")
    section(page).get_by_role("button", name="Add a security key").click()
    # webauthn.js follows the 403's confirm URL: no key was asked for, none written.
    page.wait_for_url(lambda url: urlsplit(url).path == "/account/confirm/")
    assert not WebAuthnCredential.objects.exists()
    confirm_its_you(page, "change your second factors")
    page.wait_for_url(lambda url: urlsplit(url).path == "/account/security/")
    assert urlsplit(page.url).fragment == "security-keys"
    add_key(page, "Blue key")
    assert WebAuthnCredential.objects.filter(user=alice, name="Blue key").exists()


def test_a_removed_key_no_longer_signs_in(key_page, alice):
    page = key_page
    password_step(page)
    page.wait_for_url(lambda url: urlsplit(url).path == "/")
    add_key(page, "Lost key")
    removed_id = WebAuthnCredential.objects.get(user=alice, name="Lost key").credential_id

    # A second key, on another authenticator, keeps the second step after the first is removed.
    other = Client()
    other.force_login(alice)
    options = other.post("/account/security/keys/options/").json()
    answer = {"name": "Spare key", "credential": SoftAuthenticator().create(options)}
    assert other.post("/account/security/keys/", answer, content_type="application/json").status_code == 201
    # Adding a key ends every other session of the account, this page's too: sign in again with the first.
    password_step(page)
    on_second_step(page)
    page.get_by_role("button", name="Use your security key").click()
    page.wait_for_url(lambda url: urlsplit(url).path == "/")

    page.goto("/account/security/")
    leave_browser_unconfirmed(page)
    section(page).get_by_role("row", name=re.compile("Lost key")).get_by_role("button", name="Remove Lost key").click()
    confirm_its_you(page, "remove the security key “Lost key”")
    expect(page.locator(".messages")).to_contain_text("Security key “Lost key” removed.")
    expect(page.locator("#webauthn-keys tbody tr")).to_have_count(1)
    expect(page.get_by_role("row", name=re.compile("Spare key"))).to_be_visible()

    sign_out(page)
    password_step(page)
    on_second_step(page)

    # The browser still holds the removed key: offer it, as a page that remembered it would.
    def offer_removed_key(route):
        response = route.fetch()
        options = response.json()
        options["allowCredentials"] = [{"type": "public-key", "id": removed_id}]
        route.fulfill(response=response, json=options)

    page.route("**/accounts/two-factor/webauthn/options/", offer_removed_key)
    page.get_by_role("button", name="Use your security key").click()
    expect(page.locator("#webauthn-sign-in-error")).to_have_text("This security key is not registered to your account.")
    assert path_of(page).startswith("/accounts/two-factor/")
    page.goto("/runs/")
    page.wait_for_url("**/accounts/login/?next=/runs/")


def test_without_javascript_the_keys_are_listed_and_removed_and_adding_says_what_it_needs(chromium, live_server, alice):
    context = chromium.new_context(
        base_url=live_server.url.replace("127.0.0.1", "localhost"), java_script_enabled=False
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        password_step(page)
        page.wait_for_url(lambda url: urlsplit(url).path == "/")
        # Made directly: added through the site, the key would end this page's session, and without
        # JavaScript the page could not use it to sign in again.
        WebAuthnCredential.objects.create(user=alice, name="Desk key", credential_id="ZGVzaw", public_key=b"k")

        page.goto("/account/security/")
        expect(section(page)).to_contain_text("Adding a security key needs JavaScript in your browser.")
        expect(section(page).get_by_role("button", name="Add a security key")).to_be_hidden()
        row = section(page).get_by_role("row", name=re.compile("Desk key"))
        expect(row).to_contain_text("Never")
        leave_browser_unconfirmed(page)
        row.get_by_role("button", name="Remove Desk key").click()
        confirm_its_you(page, "remove the security key “Desk key”")
        expect(page.locator(".messages")).to_contain_text("Security key “Desk key” removed.")
        expect(section(page)).to_contain_text("No security keys yet")
        assert not WebAuthnCredential.objects.exists()
    finally:
        context.close()
