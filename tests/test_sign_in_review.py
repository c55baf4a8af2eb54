"""Where the second factors, the sessions list, single sign-on and the throttle meet: a half sign-in
is no sign-in, the require-2FA rule leaves one way out, every second factor shares one throttle, an
ended session is signed out, and odd input is a 4xx (docs/two-factor.md, docs/security-keys.md,
docs/sign-in.md)."""

import json

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django_scopes import scopes_disabled
from oidc_provider import provider_fixtures
from pages_support import signed_in
from test_sso_oidc import sign_in as sso_sign_in
from two_factor_support import (
    ADDR,
    PASSWORD,
    code_at,
    enrol,
    leave_unconfirmed,
    password_step,
    signed_in_as,
    submit_code,
    submit_recovery_code,
)

from tenants import authenticator, services, two_factor
from tenants.audit import Actor
from tenants.models import AuditEvent, LoginThrottle, Membership, Role, UserSession, WebAuthnCredential

pytestmark = pytest.mark.django_db

SYSTEM = Actor.system("tests")


def half_signed_in(user, next_url: str = "") -> Client:
    """Password right, second factor not given yet."""
    client = Client()
    response = password_step(client, user.get_username(), next_url=next_url)
    assert response.status_code == 302 and response["Location"] == "/accounts/two-factor/"
    return client


def actions(tenant) -> list[str]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq").values_list("action", flat=True))


def post_json(client, url, body) -> object:
    return client.post(url, json.dumps(body), content_type="application/json", REMOTE_ADDR=ADDR)


# --- a half sign-in is not a sign-in ------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/"),
        ("get", "/runs/"),
        ("get", "/audit/export"),
        ("get", "/settings/members/"),
        ("get", "/account/security/"),
        ("get", "/accounts/password/"),
        ("post", "/account/two-factor/start/"),
        ("post", "/account/sessions/end-others/"),
        ("post", "/settings/members/two-factor/"),
    ],
)
def test_a_half_signed_in_session_reaches_no_page(alice, method, path):
    enrol(alice)
    client = half_signed_in(alice)
    response = getattr(client, method)(path)
    assert response.status_code in (302, 403)
    if response.status_code == 302:
        assert response["Location"].startswith("/accounts/login/")
    assert signed_in_as(client) is None


def test_a_half_signed_in_session_cannot_add_a_security_key_or_use_the_api(alice):
    enrol(alice)
    client = half_signed_in(alice)
    assert post_json(client, "/account/security/keys/options/", {}).status_code == 401
    assert post_json(client, "/account/security/keys/", {"name": "x", "credential": {}}).status_code == 401
    assert client.get("/api/v1/runs/").status_code in (401, 403)


@pytest.mark.parametrize("elsewhere", ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:1"])
def test_the_second_step_never_redirects_off_site(alice, elsewhere):
    secret, _ = enrol(alice)
    client = half_signed_in(alice, next_url=elsewhere)
    response = submit_code(client, code_at(secret, steps=1))
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/accounts/two-factor/?next=https://evil.example/")["Location"] == "/accounts/login/"


def test_the_second_step_keeps_a_next_on_this_site(alice):
    secret, _ = enrol(alice)
    client = half_signed_in(alice, next_url="/violations/?state=open")
    assert submit_code(client, code_at(secret, steps=1))["Location"] == "/violations/?state=open"


# --- the require-2FA rule leaves only enrolment and signing out --------------------------------------


@pytest.fixture
def required(acme):
    authenticator.tenant_set_require_two_factor(tenant=acme, required=True, actor=SYSTEM)
    return acme


@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/audit/export"),
        ("get", "/evaluations/export"),
        ("get", "/violations/counts/"),
        ("post", "/settings/members/two-factor/"),
        ("post", "/settings/retention/"),
        ("get", "/welcome/"),
    ],
)
def test_a_member_without_a_second_factor_reaches_only_enrolment(bob, required, method, path):
    client = signed_in(bob)
    response = getattr(client, method)(path)
    assert response.status_code == 302 and response["Location"] == "/account/security/"
    htmx = getattr(client, method)(path, headers={"HX-Request": "true"})
    assert htmx.status_code == 204 and htmx["HX-Redirect"] == "/account/security/"
    assert client.get("/account/security/").status_code == 200
    assert client.post("/account/two-factor/start/")["Location"] == "/account/two-factor/setup/"


def test_the_rule_does_not_lock_an_admin_out_of_turning_it_off_after_enrolling(alice, required):
    enrol(alice)
    client = signed_in(alice)
    assert client.post("/settings/members/two-factor/", {})["Location"] == "/settings/members/"
    required.refresh_from_db()
    assert not required.require_two_factor


# --- single sign-on and the sessions list --------------------------------------------------------------


provider_server, provider = provider_fixtures("alice@example.com")


def test_single_sign_on_then_the_app_is_listed_as_such_not_as_a_password(provider, alice, settings):
    settings.OIDC_TRUSTS_MFA = False
    secret, _ = enrol(alice)
    client = Client()
    assert sso_sign_in(client)["Location"] == "/accounts/two-factor/"
    assert submit_code(client, code_at(secret, steps=1)).status_code == 302
    row = UserSession.objects.get(user=alice)
    assert row.get_sign_in_method_display() == "Single sign-on and authenticator app"
    page = client.get("/account/security/").text
    assert "Single sign-on and authenticator app" in page and "Password and" not in page


def test_a_trusted_single_sign_on_skips_the_second_step_and_is_listed(provider, alice, settings):
    settings.OIDC_TRUSTS_MFA = True
    enrol(alice)
    client = Client()
    assert sso_sign_in(client, "/runs/")["Location"] == "/runs/"
    assert UserSession.objects.get(user=alice).get_sign_in_method_display() == "Single sign-on"


def test_a_password_and_app_sign_in_is_listed_as_such(alice):
    secret, _ = enrol(alice)
    client = half_signed_in(alice)
    submit_code(client, code_at(secret, steps=1))
    row = UserSession.objects.get(user=alice)
    assert row.get_sign_in_method_display() == "Password and authenticator app"


# --- one throttle for every second factor ---------------------------------------------------------------


def test_wrong_codes_of_each_kind_count_in_one_throttle_and_a_recovery_code_still_finishes(alice, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    secret, codes = enrol(alice)
    client = half_signed_in(alice)
    assert submit_code(client, "000000").status_code == 400
    assert submit_recovery_code(client, "aaaaa-aaaaa").status_code == 400
    paused = submit_code(client, "111111")
    assert paused.status_code == 429
    # A right code is refused too while paused: guessing learns nothing.
    assert submit_code(client, code_at(secret, steps=1)).status_code == 429
    # A recovery code finishes during the pause (docs/two-factor.md, "Signing in").
    finished = submit_recovery_code(client, codes[0])
    assert finished.status_code == 302 and signed_in_as(client) == str(alice.pk)


def test_a_recovery_code_works_once(alice):
    _, codes = enrol(alice)
    first = half_signed_in(alice)
    assert submit_recovery_code(first, codes[3].upper())["Location"] == "/"
    second = half_signed_in(alice)
    refused = submit_recovery_code(second, codes[3])
    assert refused.status_code == 400 and "not right, or it was used already" in refused.text
    assert signed_in_as(second) is None


# --- ended sessions, password changes, resets -----------------------------------------------------------


def test_an_ended_session_is_signed_out_on_its_next_request(alice):
    phone, laptop = Client(), Client()
    for client in (phone, laptop):
        assert password_step(client, "alice")["Location"] == "/"
    assert phone.get("/runs/").status_code == 200
    phone_row = UserSession.objects.get(pk=phone.session["user_session_id"])
    key = phone.session.session_key
    response = laptop.post(f"/account/sessions/{phone_row.pk}/end/")
    assert response.status_code == 302
    assert not Session.objects.filter(session_key=key).exists()
    assert phone.get("/runs/")["Location"].startswith("/accounts/login/")


def test_a_password_change_ends_the_others_and_keeps_this_one(alice):
    here, there = Client(), Client()
    password_step(here, "alice")
    password_step(there, "alice")
    there_key = there.session.session_key
    response = here.post(
        "/accounts/password/",
        {"old_password": PASSWORD, "new_password1": "a-new-long-passphrase", "new_password2": "a-new-long-passphrase"},
    )
    assert response.status_code == 302
    assert not Session.objects.filter(session_key=there_key).exists()
    assert there.get("/runs/")["Location"].startswith("/accounts/login/")
    assert here.get("/runs/").status_code == 200
    assert UserSession.objects.filter(user=alice).count() == 1


def test_an_admin_reset_ends_the_members_sessions_and_another_workspaces_member_is_a_404(alice, bob, charlie, acme):
    enrol(bob)
    bobs = signed_in(bob)
    bobs.get("/runs/")
    admin = signed_in(alice)
    with scopes_disabled():
        bob_membership = Membership.objects.get(user=bob, tenant=acme)
        charlies = Membership.objects.get(user=charlie)
    assert admin.post(f"/settings/members/{charlies.pk}/two-factor/reset/").status_code == 404
    assert admin.post(f"/settings/members/{bob_membership.pk}/two-factor/reset/").status_code == 302
    assert bobs.get("/runs/")["Location"].startswith("/accounts/login/")


def test_another_persons_session_is_a_404(alice, bob):
    theirs = signed_in(bob)
    theirs.get("/runs/")
    row = UserSession.objects.get(user=bob)
    assert signed_in(alice).post(f"/account/sessions/{row.pk}/end/").status_code == 404
    assert theirs.get("/runs/").status_code == 200


# --- audit lands in the person's workspaces only ----------------------------------------------------------


def test_second_factor_events_land_in_each_of_the_persons_workspaces_only(alice, acme, globex, charlie):
    other = services.tenant_create(slug="initech", name="Initech", actor=SYSTEM)
    services.membership_set(tenant=globex, user=alice, role=Role.VIEWER, actor=SYSTEM)
    _, codes = enrol(alice)
    client = half_signed_in(alice)
    submit_recovery_code(client, codes[0])
    for tenant in (acme, globex):
        assert "accounts.two_factor.enrolled" in actions(tenant)
        assert "accounts.two_factor.recovery_code_used" in actions(tenant)
    assert not any(a.startswith("accounts.two_factor") for a in actions(other))


# --- odd input is a 4xx ---------------------------------------------------------------------------------


ODD_VALUES = ["", " ", "x" * 100_000, "١٢٣٤٥٦", "12345\x00", "🔑" * 10, "<script>"]


@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_codes_on_the_second_step_are_a_400(alice, value):
    enrol(alice)
    client = half_signed_in(alice)
    assert submit_code(client, value).status_code == 400
    assert submit_recovery_code(client, value).status_code == 400
    assert client.post("/accounts/two-factor/", {"code": [value, "123456"]}, REMOTE_ADDR=ADDR).status_code == 400


@pytest.mark.parametrize(
    "body",
    [
        {},
        [],
        "x",
        None,
        5,
        {"credential": []},
        {"credential": "x" * 10_000},
        {"credential": {"id": 5}},
        {"credential": {"id": "x", "rawId": "x", "type": "public-key", "response": []}},
        {"credential": {"response": {}}},
    ],
)
def test_odd_security_key_answers_are_a_4xx(alice, body):
    client = signed_in(alice)
    assert client.post("/account/security/keys/options/").status_code == 200
    added = post_json(client, "/account/security/keys/", {"name": "k", **body} if isinstance(body, dict) else body)
    assert 400 <= added.status_code < 500 and "error" in added.json()
    enrol(alice)
    half = half_signed_in(alice)
    assert half.post("/accounts/two-factor/webauthn/verify/", "{", content_type="application/json").status_code == 400


@pytest.mark.parametrize("name", ["", " ", "x" * 101, ["a"], {"a": 1}, 5, None])
def test_odd_key_names_are_a_400_naming_the_field(alice, name):
    client = signed_in(alice)
    client.post("/account/security/keys/options/")
    added = post_json(client, "/account/security/keys/", {"name": name, "credential": {}})
    assert added.status_code == 400 and added.json()["field"] == "name"


@pytest.mark.parametrize("pk", ["99999999999999999999", "0"])
def test_huge_ids_are_a_404(alice, pk):
    client = signed_in(alice)
    assert client.post(f"/account/sessions/{pk}/end/").status_code == 404
    assert client.post(f"/account/security/keys/{pk}/remove/").status_code == 404
    assert client.post(f"/settings/members/{pk}/two-factor/reset/").status_code == 404


def test_a_password_in_another_script_confirms_removing_the_app(alice):
    # The confirmation takes a code or the password; a password that is not ASCII used to reach the
    # code comparison, which raises on non-ASCII text: a 500 instead of the app removed.
    alice.set_password("пароль-ünïcode-١٢٣٤٥٦")
    alice.save()
    enrol(alice)
    client = signed_in(alice)
    leave_unconfirmed(client)
    wrong = client.post("/account/two-factor/remove/", {"remove-confirmation": "١٢٣٤٥٦"})
    assert wrong.status_code == 400 and "neither a current authenticator code nor your password" in wrong.text
    done = client.post("/account/two-factor/remove/", {"remove-confirmation": "пароль-ünïcode-١٢٣٤٥٦"})
    assert done.status_code == 302 and not two_factor.has_second_factor(alice)


# --- removing a security key asks who is at the keyboard, as removing the app does -----------------------


def test_removing_a_security_key_asks_for_a_code_or_the_password(alice, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    key = WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    client = signed_in(alice)
    leave_unconfirmed(client)
    asked = client.post(f"/account/security/keys/{key.pk}/remove/")
    assert asked.status_code == 200 and "To remove the security key “Blue key”, confirm it is you" in asked.text
    assert 'name="confirmation"' in asked.text
    wrong = client.post(f"/account/security/keys/{key.pk}/remove/", {"confirmation": "not-it"}, REMOTE_ADDR=ADDR)
    assert wrong.status_code == 400 and "neither a current authenticator code nor your password" in wrong.text
    assert WebAuthnCredential.objects.filter(pk=key.pk).exists()
    # A wrong answer counts as a failed sign-in: the second one pauses, the right password included.
    paused = client.post(f"/account/security/keys/{key.pk}/remove/", {"confirmation": "still-not"}, REMOTE_ADDR=ADDR)
    assert paused.status_code == 429
    assert (
        client.post(
            f"/account/security/keys/{key.pk}/remove/", {"confirmation": PASSWORD}, REMOTE_ADDR=ADDR
        ).status_code
        == 429
    )
    assert WebAuthnCredential.objects.filter(pk=key.pk).exists()


def test_a_security_key_is_removed_with_the_password(alice):
    key = WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    client = signed_in(alice)
    leave_unconfirmed(client)
    done = client.post(f"/account/security/keys/{key.pk}/remove/", {"confirmation": PASSWORD}, follow=True)
    assert "Security key “Blue key” removed." in done.text
    assert not WebAuthnCredential.objects.filter(pk=key.pk).exists()


def test_an_account_with_no_password_and_no_app_confirms_a_key_removal_by_signing_in_again(alice):
    # Signed in only through single sign-on: there is no password or code to ask for, so a sign-in
    # within REAUTHENTICATE_MINUTES is the confirmation (docs/two-factor.md).
    alice.set_unusable_password()
    alice.save()
    key = WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    client = signed_in(alice)
    leave_unconfirmed(client)
    asked = client.post(f"/account/security/keys/{key.pk}/remove/", {"confirmation": "anything"})
    assert asked.status_code == 200 and 'data-testid="confirm-by-signing-in"' in asked.text
    assert 'name="confirmation"' not in asked.text
    assert WebAuthnCredential.objects.filter(pk=key.pk).exists()
    assert signed_in(alice).post(f"/account/security/keys/{key.pk}/remove/").status_code == 302
    assert not WebAuthnCredential.objects.filter(pk=key.pk).exists()


def test_wrong_current_passwords_on_the_password_change_count_as_failed_sign_ins(alice, settings):
    # As the confirmation for removing a second factor: a screen left signed in is no place to guess
    # the password from.
    settings.LOGIN_FAILURE_LIMIT = 2
    client = signed_in(alice)
    new = {"new_password1": "a-new-long-passphrase", "new_password2": "a-new-long-passphrase"}
    first = client.post("/accounts/password/", {"old_password": "guess-1", **new}, REMOTE_ADDR=ADDR)
    assert first.status_code == 200 and "Your old password was entered incorrectly" in first.text
    assert client.post("/accounts/password/", {"old_password": "guess-2", **new}, REMOTE_ADDR=ADDR).status_code == 429
    paused = client.post("/accounts/password/", {"old_password": PASSWORD, **new}, REMOTE_ADDR=ADDR)
    assert paused.status_code == 429 and paused["Retry-After"]
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


# --- an admin's reset is not a way around the confirmation --------------------------------------------


def test_an_admin_cannot_reset_their_own_second_factors_from_the_members_page(alice, acme):
    # The Members page offers no Reset on one's own row; a hand-made post would otherwise strip the
    # factors that removing the app on Account security asks a code or the password for.
    enrol(alice)
    client = signed_in(alice)
    with scopes_disabled():
        own = Membership.objects.get(user=alice, tenant=acme)
    refused = client.post(f"/settings/members/{own.pk}/two-factor/reset/")
    assert refused.status_code == 403 and "Account security" in refused.text
    assert two_factor.has_second_factor(alice)
    assert "accounts.two_factor.reset" not in actions(acme)


def test_a_workspace_admin_cannot_reset_a_superusers_second_factors(alice, bob, acme):
    # A superuser's account guards every workspace: only the server's operator resets it.
    enrol(bob)
    bob.is_superuser = True
    bob.save()
    with scopes_disabled():
        theirs = Membership.objects.get(user=bob, tenant=acme)
    refused = signed_in(alice).post(f"/settings/members/{theirs.pk}/two-factor/reset/")
    assert refused.status_code == 403 and "manage.py reset_two_factor" in refused.text
    assert two_factor.has_second_factor(bob)


def test_with_passwords_off_the_confirmation_takes_the_app_code_not_the_password(alice, settings):
    # OIDC_ONLY: no password is checked anywhere (docs/sso.md), so one left over from before is no proof.
    settings.OIDC_ONLY = True
    secret, _ = enrol(alice)
    client = signed_in(alice)
    leave_unconfirmed(client)
    refused = client.post("/account/two-factor/remove/", {"remove-confirmation": PASSWORD})
    assert refused.status_code == 400 and two_factor.has_second_factor(alice)
    done = client.post("/account/two-factor/remove/", {"remove-confirmation": code_at(secret, steps=1)})
    assert done.status_code == 302 and not two_factor.has_second_factor(alice)


def test_an_account_with_only_keys_and_single_sign_on_can_print_new_recovery_codes(alice, settings):
    # No password (or passwords off) and no app: there is nothing to ask, and the codes are still theirs.
    settings.OIDC_ONLY = True
    WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    page = signed_in(alice).post("/account/two-factor/recovery-codes/", {})
    assert page.status_code == 200 and page.text.count("<li") >= 10
    assert authenticator.recovery_codes_left(alice) == 10
    assert "Authenticator code or your password" not in signed_in(alice).get("/account/security/").text


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"credential": None},
        {"credential": []},
        {"credential": "é" * 5000},
        {"credential": {"id": ["x"], "rawId": {}, "type": 5}},
        {"credential": {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": "%%"}}},
        {"credential": {"id": "abc", "rawId": "abc", "type": "public-key", "response": {"signature": None}}},
    ],
)
def test_odd_security_key_answers_on_the_second_step_are_a_4xx_and_counted(alice, settings, body):
    settings.LOGIN_FAILURE_LIMIT = 100
    WebAuthnCredential.objects.create(user=alice, name="Blue key", credential_id="abc", public_key=b"k")
    client = half_signed_in(alice)
    assert post_json(client, "/accounts/two-factor/webauthn/options/", {}).status_code == 200
    answer = post_json(client, "/accounts/two-factor/webauthn/verify/", body)
    assert 400 <= answer.status_code < 500 and answer.json()["error"]
    assert signed_in_as(client) is None
    # account, address, the two together, and the account's second factor from every address
    assert LoginThrottle.objects.filter(failures=1).count() == 4


# --- recovery codes at rest -----------------------------------------------------------------------------


def test_recovery_code_hashes_are_keyed_so_a_database_copy_alone_cannot_test_guesses(alice, settings):
    # Ten characters of base 32 are 50 bits: a plain SHA-256 of each is within reach of a GPU given
    # only the table. Keyed with GOVERNANCE_SECRETS_KEY, a guess needs the server's key as well.
    _, codes = enrol(alice)
    old_key = settings.GOVERNANCE_SECRETS_KEY
    settings.GOVERNANCE_SECRETS_KEY = "another-secrets-key"
    assert not authenticator.recovery_code_use(user=alice, code=codes[0])
    # A rotated key kept after the new one (docs/security.md) still recognises the codes.
    settings.GOVERNANCE_SECRETS_KEY = f"another-secrets-key,{old_key}"
    assert authenticator.recovery_code_use(user=alice, code=codes[0])


def test_a_password_sign_in_over_a_trusted_sso_session_is_a_password_sign_in(provider, alice, acme, settings):
    # "A password sign-in never counts as the provider's" (docs/two-factor.md): not even in a browser
    # that signed in through single sign-on before, whose session Django keeps for the same person.
    settings.OIDC_TRUSTS_MFA = True
    authenticator.tenant_set_require_two_factor(tenant=acme, required=True, actor=SYSTEM)
    client = Client()
    sso_sign_in(client)
    assert client.get("/runs/").status_code == 200
    password_step(client, "alice")
    assert client.get("/runs/")["Location"] == "/account/security/"
    assert UserSession.objects.get(user=alice).get_sign_in_method_display() == "Password"
