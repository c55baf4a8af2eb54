"""Two browsers signed in as alice: the first sees both on its account security page, ends the
second from there, and the second's next page load lands on the sign-in page."""

from urllib.parse import urlsplit

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect

from tenants.models import UserSession

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
PHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Mobile/15E148 Safari/604.1"
)


def test_ending_another_browsers_session_from_the_page_signs_it_out(
    chromium, browser_page, live_server, sign_in, alice, screenshot
):
    phone_context = chromium.new_context(base_url=live_server.url, user_agent=PHONE)
    phone = phone_context.new_page()
    phone.set_default_timeout(10_000)
    try:
        sign_in(phone, "alice", PASSWORD, next_path="/policies/")
        sign_in(browser_page, "alice", PASSWORD, next_path="/account/security/")
        page = browser_page

        rows = page.locator("#sessions-table tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0)).to_contain_text("This session")
        expect(rows.nth(0).get_by_role("button", name="End")).to_have_count(0)
        expect(rows.nth(1)).to_contain_text("Safari 18 on iOS")
        expect(rows.nth(1)).to_contain_text("127.0.0.1")
        screenshot(page, "account-sessions")

        rows.nth(1).get_by_role("button", name="End").click()
        expect(page.get_by_text("Session ended: Safari 18 on iOS is signed out.")).to_be_visible()
        expect(rows).to_have_count(1)
        expect(page.get_by_role("button", name="End all other sessions")).to_have_count(0)
        assert UserSession.objects.filter(user=alice).count() == 1

        phone.goto("/policies/")
        assert urlsplit(phone.url).path == "/accounts/login/"
        expect(phone.get_by_label("Username")).to_be_visible()

        page.goto("/policies/")  # the first browser is still signed in
        assert urlsplit(page.url).path == "/policies/"
    finally:
        phone_context.close()
