""" "Confirm it's you" before changing second factors (tenants/pages/reauthenticate.py,
docs/two-factor.md): adding the authenticator app or a security key, printing new recovery codes and
removing a factor need a sign-in or a confirmation within REAUTHENTICATE_MINUTES. Without one nothing
is written and the person is asked; a wrong answer counts as a failed sign-in."""

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django_scopes import scopes_disabled
from oidc_provider import provider_fixtures
from page_forms import field_errors
from test_sso_oidc import sign_in as sso_sign_in
from two_factor_support import ADDR, PASSWORD, code_at, enrol, leave_unconfirmed, password_step, shown_secret
from webauthn_authenticator import SoftAuthenticator

from tenants import authenticator, two_factor
from tenants.models import LoginThrottle, Membership, RecoveryCode, TotpDevice, WebAuthnCredential

pytestmark = pytest.mark.django_db

START = "/account/two-factor/start/"
SETUP = "/account/two-factor/setup/"
REGENERATE = "/account/two-factor/recovery-codes/"
KEY_OPTIONS = "/account/security/keys/options/"
KEYS = "/account/security/keys/"
WRONG = "That is neither a current authenticator code nor your password."


def left_signed_in(user, *, minutes: int = 11) -> Client:
    """A session whose sign-in was ``minutes`` ago, as for a screen left signed in."""
    client = Client(REMOTE_ADDR=ADDR)
    client.force_login(user)
    leave_unconfirmed(client, minutes=minutes)
    return client


def post_json(client, url, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def confirm(client, answer=PASSWORD, next_url="/account/security/"):
    return client.post("/account/confirm/", {"confirmation": answer, "next": next_url})


def asks_to_confirm(response) -> bool:
    return response.status_code == 200 and 'data-testid="confirm-its-you"' in response.text


# --- the authenticator app ------------------------------------------------------------------------


def test_setting_up_the_app_without_a_recent_confirmation_asks_and_writes_nothing(alice):
    client = left_signed_in(alice)
    asked = client.post(START)
    assert asks_to_confirm(asked) and "To set up an authenticator app, confirm it is you" in asked.text
    assert f'action="{START}"' in asked.text  # the confirm page posts back and goes on
    assert not TotpDevice.objects.filter(user=alice).exists()
    assert client.get(SETUP)["Location"] == "/account/security/"  # nothing started, nothing shown


def test_setting_up_the_app_goes_ahead_once_confirmed_on_the_way(alice):
    client = left_signed_in(alice)
    started = client.post(START, {"confirmation": PASSWORD})
    assert started.status_code == 302 and started["Location"] == SETUP
    secret = shown_secret(client.get(SETUP).text)
    done = client.post(SETUP, {"code": code_at(secret)})
    assert done.status_code == 200 and two_factor.has_second_factor(alice)


def test_a_wrong_confirmation_sets_up_nothing_and_counts_as_a_failed_sign_in(alice, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    client = left_signed_in(alice)
    wrong = client.post(START, {"confirmation": "not-it"})
    assert wrong.status_code == 400
    assert field_errors(wrong.text, "confirmation") == [
        "That is neither a current authenticator code nor your password."
    ]
    assert LoginThrottle.objects.filter(failures=1).exists()
    assert client.post(START, {"confirmation": "still-not"}).status_code == 429
    assert client.post(START, {"confirmation": PASSWORD}).status_code == 429  # paused: the right one too
    assert not TotpDevice.objects.filter(user=alice).exists()


def test_a_secret_left_on_screen_past_the_window_is_not_shown_or_confirmed(alice):
    client = Client(REMOTE_ADDR=ADDR)
    client.force_login(alice)
    assert client.post(START).status_code == 302  # just signed in: no question
    secret = shown_secret(client.get(SETUP).text)
    leave_unconfirmed(client)
    page = client.get(SETUP)
    assert page.status_code == 302 and page["Location"] == "/account/confirm/?next=%2Faccount%2Ftwo-factor%2Fsetup%2F"
    assert client.post(SETUP, {"code": code_at(secret)}).status_code == 302
    assert not two_factor.has_second_factor(alice)
    back = confirm(client, next_url=SETUP)
    assert back["Location"] == SETUP and shown_secret(client.get(SETUP).text) == secret


# --- recovery codes and removal --------------------------------------------------------------------


def test_new_recovery_codes_are_not_printed_without_a_recent_confirmation(alice):
    secret, old = enrol(alice)
    client = left_signed_in(alice)
    before = set(RecoveryCode.objects.filter(user=alice).values_list("pk", flat=True))
    asked = client.post(REGENERATE)
    assert asks_to_confirm(asked) and 'name="regenerate-confirmation"' in asked.text
    assert set(RecoveryCode.objects.filter(user=alice).values_list("pk", flat=True)) == before
    shown = client.post(REGENERATE, {"regenerate-confirmation": code_at(secret, steps=1)})
    assert shown.status_code == 200 and 'data-testid="recovery-codes"' in shown.text
    assert not authenticator.recovery_code_use(user=alice, code=old[0])


def test_the_security_page_asks_inline_only_when_the_confirmation_is_old(alice):
    enrol(alice)
    fresh = Client(REMOTE_ADDR=ADDR)
    fresh.force_login(alice)
    assert 'name="remove-confirmation"' not in fresh.get("/account/security/").text
    assert 'name="remove-confirmation"' in left_signed_in(alice).get("/account/security/").text


# --- the window --------------------------------------------------------------------------------


def test_a_confirmation_lasts_reauthenticate_minutes(alice, settings):
    settings.REAUTHENTICATE = settings.REAUTHENTICATE * 3  # REAUTHENTICATE_MINUTES=30
    within = left_signed_in(alice, minutes=29)
    assert within.post(START).status_code == 302
    past = left_signed_in(alice, minutes=31)
    assert asks_to_confirm(past.post(START))


def test_once_confirmed_the_next_changes_ask_nothing_until_the_window_ends(alice):
    client = left_signed_in(alice)
    assert confirm(client)["Location"] == "/account/security/"
    assert client.post(START).status_code == 302
    assert client.get(SETUP).status_code == 200
    leave_unconfirmed(client)
    assert asks_to_confirm(client.post(START))


def test_a_password_sign_in_counts_as_a_confirmation(alice):
    client = Client()
    assert password_step(client)["Location"] == "/"
    assert client.post(START, REMOTE_ADDR=ADDR).status_code == 302


def test_a_stamp_from_the_future_or_garbage_is_no_confirmation(alice):
    client = left_signed_in(alice, minutes=-60)
    assert asks_to_confirm(client.post(START))
    session = client.session
    session[two_factor.CONFIRMED_AT_KEY] = "not a time"
    session.save()
    assert asks_to_confirm(client.post(START))


def test_the_confirm_page_goes_only_to_this_site(alice):
    client = left_signed_in(alice)
    page = client.get("/account/confirm/?next=https://evil.example/")
    assert asks_to_confirm(page) and "evil.example" not in page.text
    assert confirm(client, next_url="https://evil.example/")["Location"] == "/"
    assert client.get("/account/confirm/?next=/account/security/")["Location"] == "/account/security/"


def test_the_confirm_page_needs_a_signed_in_person():
    assert Client().get("/account/confirm/")["Location"].startswith("/accounts/login/")


# --- security keys ---------------------------------------------------------------------------------


def test_adding_a_key_without_a_recent_confirmation_is_a_403_with_where_to_confirm(alice):
    client = left_signed_in(alice)
    for url in (KEY_OPTIONS, KEYS):
        refused = post_json(client, url, {"name": "Blue key", "credential": {}})
        assert refused.status_code == 403
        body = refused.json()
        assert body["error"] == "Confirm it's you to add a security key."
        back = urlsplit(body["confirm_url"])
        assert back.path == "/account/confirm/"
        assert parse_qs(back.query)["next"] == ["/account/security/#security-keys"]
    assert not WebAuthnCredential.objects.filter(user=alice).exists()
    assert "webauthn_registration" not in client.session  # no challenge handed out either


def test_a_key_is_added_once_confirmed(alice):
    client = left_signed_in(alice)
    assert (
        confirm(client, next_url="/account/security/#security-keys")["Location"] == "/account/security/#security-keys"
    )
    options = post_json(client, KEY_OPTIONS)
    assert options.status_code == 200
    added = post_json(client, KEYS, {"name": "Blue key", "credential": SoftAuthenticator().create(options.json())})
    assert added.status_code == 201 and WebAuthnCredential.objects.filter(user=alice, name="Blue key").exists()


def test_removing_a_key_past_the_window_asks_and_keeps_it(alice):
    key = WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    client = left_signed_in(alice)
    assert asks_to_confirm(client.post(f"/account/security/keys/{key.pk}/remove/"))
    assert WebAuthnCredential.objects.filter(pk=key.pk).exists()
    assert client.post(f"/account/security/keys/{key.pk}/remove/", {"confirmation": PASSWORD}).status_code == 302
    assert not WebAuthnCredential.objects.filter(pk=key.pk).exists()


def test_another_persons_key_is_a_404_before_any_question(alice, bob):
    key = WebAuthnCredential.objects.create(user=bob, name="Bob's key", credential_id="abc", public_key=b"k")
    assert left_signed_in(alice).post(f"/account/security/keys/{key.pk}/remove/").status_code == 404
    assert WebAuthnCredential.objects.filter(pk=key.pk).exists()


# --- an admin's reset of a member's second factors ------------------------------------------------


def test_an_admins_reset_of_a_member_asks_past_the_window_and_resets_nothing_until_answered(alice, bob, acme):
    enrol(bob)
    with scopes_disabled():
        bobs = Membership.objects.get(user=bob, tenant=acme)
    url = f"/settings/members/{bobs.pk}/two-factor/reset/"
    admin = left_signed_in(alice)
    asked = admin.post(url)
    assert asks_to_confirm(asked) and "To reset the second factors of bob, confirm it is you" in asked.text
    assert two_factor.has_second_factor(bob)
    assert admin.post(url, {"confirmation": "not-it"}).status_code == 400 and two_factor.has_second_factor(bob)
    assert admin.post(url, {"confirmation": PASSWORD}).status_code == 302
    assert not two_factor.has_second_factor(bob)


def test_another_workspaces_member_is_a_404_before_any_question(alice, charlie):
    enrol(charlie)
    with scopes_disabled():
        theirs = Membership.objects.get(user=charlie)
    admin = left_signed_in(alice)
    assert admin.post(f"/settings/members/{theirs.pk}/two-factor/reset/", {"confirmation": PASSWORD}).status_code == 404
    assert two_factor.has_second_factor(charlie)


# --- single sign-on without a password ------------------------------------------------------------


provider_server, provider = provider_fixtures("alice@example.com")


def test_an_account_without_a_password_confirms_with_a_fresh_single_sign_on(provider, alice, settings):
    settings.OIDC_ONLY = True
    alice.set_unusable_password()
    alice.save()
    client = left_signed_in(alice)
    asked = client.post(START, {"confirmation": PASSWORD})
    assert asks_to_confirm(asked) and 'data-testid="confirm-by-signing-in"' in asked.text
    assert 'name="confirmation"' not in asked.text
    assert 'href="/accounts/oidc/login/?next=%2Faccount%2Fsecurity%2F"' in asked.text
    assert not TotpDevice.objects.filter(user=alice).exists()
    assert sso_sign_in(client, "/account/security/")["Location"] == "/account/security/"
    assert client.post(START).status_code == 302
