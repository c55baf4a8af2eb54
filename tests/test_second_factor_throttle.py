"""The account-wide cap on wrong second factors (tenants/login_throttle.py, docs/two-factor.md):
with the password known to many addresses, each of them would otherwise get its own guesses at a
6-digit code. Past LOGIN_SECOND_FACTOR_FAILURE_LIMIT wrong codes and keys from every address, the code
and key steps of that account are paused until the cool-off ends; a recovery code still signs in."""

import json

import pytest
from django.test import Client
from django_scopes import scopes_disabled
from oidc_provider import provider_fixtures
from test_sso_oidc import sign_in as sso_sign_in
from two_factor_support import PASSWORD, Clock, code_at, enrol, signed_in_as

from tenants import login_throttle, services
from tenants.audit import Actor
from tenants.models import AuditEvent, Role, WebAuthnCredential

pytestmark = pytest.mark.django_db

PAUSED = "second_factor_paused"
KEY_OPTIONS = "/accounts/two-factor/webauthn/options/"


def address(n: int) -> str:
    return f"198.51.100.{n}"


def half_signed_in(n: int) -> Client:
    """Password right from address ``n``; the second step waits."""
    client = Client(REMOTE_ADDR=address(n))
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response["Location"] == "/accounts/two-factor/"
    return client


def wrong_code(secret: str, clock=None) -> str:
    return code_at(secret, clock, steps=1000)  # a code of another time: not one the app shows now


def guess_from_many_addresses(secret: str, count: int, clock=None, first: int = 1) -> list[int]:
    statuses = []
    for n in range(first, first + count):
        statuses.append(
            half_signed_in(n).post("/accounts/two-factor/", {"code": wrong_code(secret, clock)}).status_code
        )
    return statuses


def pauses(tenant) -> int:
    with scopes_disabled():
        return AuditEvent.objects.filter(tenant=tenant, action=f"accounts.two_factor.{PAUSED}").count()


def test_wrong_codes_from_many_addresses_pause_the_code_step_for_the_account(alice, acme, settings):
    assert settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT == 10
    secret, _ = enrol(alice)
    # Each address fails once, far below its own limit: only the account-wide count catches it.
    assert guess_from_many_addresses(secret, 9) == [400] * 9
    tenth = half_signed_in(10).post("/accounts/two-factor/", {"code": wrong_code(secret)})
    assert tenth.status_code == 429 and "Use a recovery code" in tenth.text
    client = half_signed_in(11)
    page = client.get("/accounts/two-factor/")
    assert 'data-testid="second-factor-paused"' in page.text and "a recovery code works now" in page.text
    right = client.post("/accounts/two-factor/", {"code": code_at(secret)})
    assert right.status_code == 429 and int(right["Retry-After"]) > 14 * 60
    assert "Use a recovery code, or try again later." in right.text
    assert signed_in_as(client) is None


def test_a_recovery_code_still_signs_in_during_the_pause(alice, settings):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 3
    secret, codes = enrol(alice)
    guess_from_many_addresses(secret, 3)
    client = half_signed_in(20)
    done = client.post("/accounts/two-factor/recovery/", {"recovery_code": codes[0]})
    assert done.status_code == 302 and signed_in_as(client) == str(alice.pk)


def test_the_pause_ends_with_the_cool_off_and_attempts_during_it_do_not_extend_it(alice, settings, monkeypatch):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 3
    clock = Clock(monkeypatch)
    secret, _ = enrol(alice)
    guess_from_many_addresses(secret, 3, clock)
    until = login_throttle.second_factor_locked_until(username="alice")
    assert until == clock.now + settings.LOGIN_COOLOFF
    clock.advance(minutes=14)
    assert guess_from_many_addresses(secret, 3, clock, first=30) == [429] * 3  # refused, not counted
    assert login_throttle.second_factor_locked_until(username="alice") == until
    clock.advance(minutes=1, seconds=1)
    client = half_signed_in(40)
    assert client.post("/accounts/two-factor/", {"code": code_at(secret, clock)}).status_code == 302
    assert signed_in_as(client) == str(alice.pk)


def test_the_pause_is_audited_once_in_each_of_the_persons_workspaces(alice, acme, globex, bob, settings):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 3
    services.membership_set(tenant=globex, user=alice, role=Role.REVIEWER, actor=Actor.system("tests"))
    secret, _ = enrol(alice)
    guess_from_many_addresses(secret, 6)
    assert pauses(acme) == 1 and pauses(globex) == 1
    with scopes_disabled():
        row = AuditEvent.objects.get(tenant=acme, action=f"accounts.two_factor.{PAUSED}")
    assert row.actor_label == "sign-in throttle" and row.after["failures"] == 3


def test_wrong_recovery_codes_do_not_count_towards_the_pause(alice, settings):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 2
    secret, _ = enrol(alice)
    for n in range(1, 4):
        assert (
            half_signed_in(n).post("/accounts/two-factor/recovery/", {"recovery_code": "abcde-12345"}).status_code
            == 400
        )
    assert login_throttle.second_factor_locked_until(username="alice") is None
    assert half_signed_in(5).post("/accounts/two-factor/", {"code": code_at(secret, steps=1)}).status_code == 302


def test_wrong_security_keys_count_and_the_key_step_is_paused(alice, settings):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 3
    WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    for n in range(1, 4):
        client = half_signed_in(n)
        assert (
            client.post("/accounts/two-factor/webauthn/options/", "{}", content_type="application/json").status_code
            == 200
        )
        bad = {"credential": {"id": "abc", "rawId": "abc", "type": "public-key", "response": {}}}
        answer = client.post("/accounts/two-factor/webauthn/verify/", json.dumps(bad), content_type="application/json")
        assert answer.status_code == (429 if n == 3 else 400)
    refused = half_signed_in(9).post(KEY_OPTIONS, "{}", content_type="application/json")
    assert refused.status_code == 429 and refused["Retry-After"]
    assert refused.json()["error"].startswith(
        "Too many wrong codes and security keys for this account: use a recovery code"
    )


def test_an_admin_unlock_ends_the_pause(alice, settings):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 2
    secret, _ = enrol(alice)
    guess_from_many_addresses(secret, 2)
    assert login_throttle.unlock(username="alice") >= 1
    assert login_throttle.second_factor_locked_until(username="alice") is None
    assert half_signed_in(7).post("/accounts/two-factor/", {"code": code_at(secret, steps=1)}).status_code == 302


# --- single sign-on the provider vouches for never reaches the step ------------------------------------


provider_server, provider = provider_fixtures("alice@example.com")


def test_single_sign_on_with_trusted_mfa_still_signs_in_during_the_pause(provider, alice, settings):
    settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT = 2
    settings.OIDC_TRUSTS_MFA = True
    secret, _ = enrol(alice)
    guess_from_many_addresses(secret, 2)
    assert login_throttle.second_factor_locked_until(username="alice") is not None
    client = Client()
    assert sso_sign_in(client, "/runs/")["Location"] == "/runs/"
    assert signed_in_as(client) == str(alice.pk)
