"""Single sign-on in Chromium with JavaScript turned off: an invited person presses "Sign in with …",
signs in at the identity provider (tests/oidc_provider.py, on loopback) and lands in the workspace
with the invited role; someone nobody invited is told what to do."""

import pytest

pytest.importorskip("playwright")
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled
from oidc_provider import OidcProvider, configure
from playwright.sync_api import expect

from tenants import invitations, oidc
from tenants.audit import Actor
from tenants.models import Membership, Role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def provider(settings):
    with OidcProvider() as provider:
        configure(settings, provider)
        yield provider
    oidc.forget_cached()


@pytest.fixture
def no_js_page(chromium, live_server):
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def test_an_invited_person_signs_in_with_the_provider_and_lands_in_the_workspace(provider, no_js_page, acme, alice):
    invitations.invitation_create(tenant=acme, email="erin@example.com", role=Role.REVIEWER, actor=Actor(user=alice))
    page = no_js_page
    page.goto("/runs/")
    page.wait_for_url("**/accounts/login/?next=/runs/")
    page.get_by_role("link", name="Sign in with Example ID").click()
    page.wait_for_url("**/runs/")
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user__username="erin@example.com").role == Role.REVIEWER


def test_someone_nobody_invited_is_told_to_ask_for_an_invitation(provider, no_js_page, acme):
    provider.claims = {"email": "mallory@elsewhere.example"}
    page = no_js_page
    page.goto("/accounts/login/")
    page.get_by_role("link", name="Sign in with Example ID").click()
    expect(page.get_by_role("heading", name="You are not signed in")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text(
        "No account or invitation for mallory@elsewhere.example. Ask an admin of your workspace to invite you."
    )
    assert get_user_model().objects.count() == 0
