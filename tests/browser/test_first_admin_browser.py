"""From a fresh server to a team, in the browser: the superuser `createsuperuser` made signs in,
creates the first workspace, invites a reviewer and copies the link; the reviewer opens it, chooses a
password and lands on the dashboard as a reviewer."""

import re

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django.core import mail
from django_scopes import scopes_disabled
from playwright.sync_api import expect

from tenants.models import Membership, Role, Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
REVIEWER_PASSWORD = "a-long-new-passphrase"


def test_superuser_creates_the_first_workspace_and_a_reviewer_joins_by_invitation(
    browser_page, live_server, screenshot
):
    page = browser_page
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)

    page.goto("/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/welcome/")
    expect(page.get_by_role("heading", name="Create your first workspace")).to_be_visible()

    # a bad slug first: the error is beside the field and nothing is made
    page.get_by_label("Name").fill("Acme Research")
    page.get_by_label("Slug").fill("acme research!")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.locator("#id_slug_error")).to_have_text(
        "Enter a valid “slug” consisting of letters, numbers, underscores or hyphens."
    )
    assert not Tenant.objects.exists()
    page.get_by_label("Slug").fill("acme")
    page.get_by_role("button", name="Create workspace").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_text("Workspace Acme Research created. You are its admin.")).to_be_visible()
    expect(page.get_by_title("Your role in Acme Research")).to_have_text("admin")
    screenshot(page, "first-admin-workspace-created")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.get_by_role("navigation", name="Settings").get_by_role("link", name="Members").click()
    invite = page.get_by_role("region", name="Invite by email")
    invite.get_by_label("Email").fill("erin@example.com")
    invite.get_by_label("Role").select_option("reviewer")
    page.get_by_role("button", name="Send invitation").click()
    shown = page.get_by_test_id("new-invitation")
    expect(shown).to_contain_text("We emailed this link to erin@example.com.")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    shown.get_by_role("button", name="Copy").click()
    expect(shown.get_by_role("button", name="Copied")).to_be_visible()
    link = page.evaluate("navigator.clipboard.readText()")
    assert re.fullmatch(rf"{re.escape(live_server.url)}/invitations/[A-Za-z0-9_-]{{43}}/", link)
    assert link in mail.outbox[0].body
    expect(page.get_by_role("row", name=re.compile("erin@example.com"))).to_contain_text("Reviewer")
    screenshot(page, "first-admin-invitation-shown")

    page.get_by_label("Account menu for root").click()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/accounts/login/")

    page.goto(link)
    expect(page.get_by_role("heading", name="Join Acme Research")).to_be_visible()
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_label("Confirm password").fill("short")
    page.get_by_role("button", name="Set password and join").click()
    expect(page.locator("#id_password_error")).to_have_text(
        "This password is too short. It must contain at least 8 characters."
    )
    assert not get_user_model().objects.filter(username="erin@example.com").exists()
    page.get_by_label("Password", exact=True).fill(REVIEWER_PASSWORD)
    page.get_by_label("Confirm password").fill(REVIEWER_PASSWORD)
    page.get_by_role("button", name="Set password and join").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_text("Welcome to Acme Research. You joined as reviewer.")).to_be_visible()
    expect(page.get_by_title("Your role in Acme Research")).to_have_text("reviewer")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Violations")).to_be_visible()
    screenshot(page, "first-admin-reviewer-joined")

    with scopes_disabled():
        erin = get_user_model().objects.get(username="erin@example.com")
        assert Membership.objects.get(tenant__slug="acme", user=erin).role == Role.REVIEWER

    # the link worked once
    page.goto(link)
    expect(page.get_by_role("heading", name="This invitation has already been used")).to_be_visible()
