"""Security keys and passkeys (tenants/webauthn.py, docs/security-keys.md): adding and removing a key
on the account security page, and using it on the second step of a password sign-in — against a
software authenticator (tests/webauthn_authenticator.py) that signs as a real key does."""

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_scopes import scopes_disabled
from webauthn_authenticator import SoftAuthenticator

from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import AuditEvent, Role, WebAuthnCredential
from tenants.signals import credentials_changed

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"
SYSTEM = Actor.system("tests")
ADDRESS = "203.0.113.9"
# Removing a key asks for a code or the password (docs/security-keys.md, "Remove a key").
CONFIRMED = {"confirmation": PASSWORD}


def post_json(client, url, body=None, **extra):
    return client.post(url, json.dumps(body or {}), content_type="application/json", REMOTE_ADDR=ADDRESS, **extra)


def signed_in(user) -> Client:
    client = Client(REMOTE_ADDR=ADDRESS)
    client.force_login(user)
    return client


def add_key(client, authenticator, name="Blue key"):
    options = post_json(client, "/account/security/keys/options/").json()
    return post_json(
        client, "/account/security/keys/", {"name": name, "credential": authenticator.create(options)}
    ), options


def enrolled(user, name="Blue key") -> SoftAuthenticator:
    authenticator = SoftAuthenticator()
    response, _ = add_key(signed_in(user), authenticator, name)
    assert response.status_code == 201, response.content
    return authenticator


def password_step(username="alice") -> tuple[Client, object]:
    client = Client(REMOTE_ADDR=ADDRESS)
    response = client.post("/accounts/login/?next=/runs/", {"username": username, "password": PASSWORD})
    return client, response


def key_step(client, authenticator, **answer):
    options = post_json(client, "/accounts/two-factor/webauthn/options/")
    assert options.status_code == 200, options.content
    answer = authenticator.get(options.json(), **answer)
    return post_json(client, "/accounts/two-factor/webauthn/verify/", {"credential": answer})


def is_signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def audit_actions(tenant) -> list[str]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq").values_list("action", flat=True))


# --- adding a key -------------------------------------------------------------------------------


def test_a_key_is_added_and_listed_on_the_security_page(alice, acme):
    client = signed_in(alice)
    authenticator = SoftAuthenticator()
    response, options = add_key(client, authenticator, "Blue key")
    assert response.status_code == 201
    assert options["rp"] == {"id": "testserver", "name": "Groundrule"}
    assert options["authenticatorSelection"]["residentKey"] == "preferred"
    assert options["authenticatorSelection"]["userVerification"] == "preferred"
    key = WebAuthnCredential.objects.get(user=alice)
    assert (key.name, key.credential_id, key.transports, key.last_used_at) == (
        "Blue key",
        authenticator.id,
        ["usb"],
        None,
    )
    page = client.get("/account/security/")
    body = page.content.decode()
    assert page.status_code == 200
    assert "Blue key" in body and "Never" in body
    assert f'action="/account/security/keys/{key.pk}/remove/"' in body
    assert "accounts.two_factor.webauthn_added" in audit_actions(acme)


def test_a_first_key_comes_with_recovery_codes_shown_once(alice):
    client = signed_in(alice)
    response, _ = add_key(client, SoftAuthenticator(), "Blue key")
    assert response.status_code == 201
    page = client.get(response.json()["redirect"])
    codes = re.findall(r"<li>([0-9a-z]{5}-[0-9a-z]{5})</li>", page.content.decode())
    assert page.status_code == 200 and len(codes) == 10
    assert "no-store" in page["Cache-Control"]
    again = client.get(response.json()["redirect"])
    assert again.status_code == 302 and again["Location"] == "/account/security/"  # shown once only
    # A second key keeps the codes the person already has.
    second, _ = add_key(client, SoftAuthenticator(), "Spare key")
    assert second.json()["redirect"] == "/account/security/"
    assert alice.recovery_codes.filter(used_at__isnull=True).count() == 10
    # One of them finishes a sign-in whose key is not at hand.
    password_client, response = password_step()
    assert response.status_code == 302 and response["Location"].startswith("/accounts/two-factor/")
    finished = password_client.post("/accounts/two-factor/recovery/", {"recovery_code": codes[0]})
    assert finished.status_code == 302 and is_signed_in(password_client)


def test_removing_the_last_second_factor_removes_the_recovery_codes(alice):
    enrolled(alice, "Blue key")
    enrolled(alice, "Spare key")
    client = signed_in(alice)
    first, last = WebAuthnCredential.objects.filter(user=alice).order_by("pk")
    client.post(f"/account/security/keys/{first.pk}/remove/", CONFIRMED)
    assert alice.recovery_codes.count() == 10
    client.post(f"/account/security/keys/{last.pk}/remove/", CONFIRMED)
    assert alice.recovery_codes.count() == 0


def test_the_options_exclude_keys_already_registered(alice):
    first = enrolled(alice)
    options = post_json(signed_in(alice), "/account/security/keys/options/").json()
    assert [d["id"] for d in options["excludeCredentials"]] == [first.id]


def test_adding_or_removing_a_key_is_audited_in_every_workspace_of_the_person_only(alice, acme, globex, charlie):
    tenant_services.membership_set(tenant=globex, user=alice, role=Role.VIEWER, actor=SYSTEM)
    other = tenant_services.tenant_create(slug="initech", name="Initech", actor=SYSTEM)
    enrolled(alice)
    key = WebAuthnCredential.objects.get(user=alice)
    signed_in(alice).post(f"/account/security/keys/{key.pk}/remove/", CONFIRMED)
    for tenant in (acme, globex):
        assert audit_actions(tenant)[-2:] == [
            "accounts.two_factor.webauthn_added",
            "accounts.two_factor.webauthn_removed",
        ]
    assert not any("webauthn" in a for a in audit_actions(other))
    with scopes_disabled():
        event = AuditEvent.objects.get(tenant=acme, action="accounts.two_factor.webauthn_added")
    assert (event.actor_id, event.after["name"]) == (alice.pk, "Blue key")


def test_adding_and_removing_a_key_tell_the_sessions_code(alice):
    heard = []

    def listener(sender, user, request, **kwargs):
        heard.append((user.pk, request is not None))

    credentials_changed.connect(listener)
    try:
        enrolled(alice)
        key = WebAuthnCredential.objects.get(user=alice)
        signed_in(alice).post(f"/account/security/keys/{key.pk}/remove/", CONFIRMED)
    finally:
        credentials_changed.disconnect(listener)
    assert heard == [(alice.pk, True), (alice.pk, True)]


@pytest.mark.parametrize(
    "name, message",
    [
        ("", "Give the key a name"),
        ("   ", "Give the key a name"),
        (None, "Give the key a name"),
        ("x" * 101, "at most 100"),
    ],
)
def test_a_key_without_a_usable_name_is_refused(alice, name, message):
    client = signed_in(alice)
    options = post_json(client, "/account/security/keys/options/").json()
    response = post_json(
        client, "/account/security/keys/", {"name": name, "credential": SoftAuthenticator().create(options)}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "name"
    assert message in response.json()["error"]
    assert not WebAuthnCredential.objects.exists()


@pytest.mark.parametrize(
    "body, content_type, field",
    [
        (b"{not json", "application/json", "body"),
        (b"[1, 2]", "application/json", "body"),
        (b"\xff\xfe", "application/json", "body"),
        (b"name=Blue+key", "application/x-www-form-urlencoded", "credential"),
    ],
)
def test_an_unreadable_request_is_refused_naming_the_problem(alice, body, content_type, field):
    client = signed_in(alice)
    post_json(client, "/account/security/keys/options/")
    response = client.post("/account/security/keys/", body, content_type=content_type)
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert not WebAuthnCredential.objects.exists()


@pytest.mark.parametrize(
    "credential",
    [None, "garbage", {"id": "x"}, {"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {}}, 42],
)
def test_a_malformed_answer_is_refused(alice, credential):
    client = signed_in(alice)
    post_json(client, "/account/security/keys/options/")
    response = post_json(client, "/account/security/keys/", {"name": "Blue key", "credential": credential})
    assert response.status_code == 400
    assert response.json()["field"] == "credential"
    assert not WebAuthnCredential.objects.exists()


def test_an_answer_is_refused_without_options_first_or_for_another_challenge(alice):
    client = signed_in(alice)
    authenticator = SoftAuthenticator()
    stale = {"challenge": "c3RhbGU", "rp": {"id": "testserver"}}
    response = post_json(client, "/account/security/keys/", {"name": "k", "credential": authenticator.create(stale)})
    assert (response.status_code, response.json()["field"]) == (400, "challenge")
    post_json(client, "/account/security/keys/options/")
    response = post_json(client, "/account/security/keys/", {"name": "k", "credential": authenticator.create(stale)})
    assert response.status_code == 400
    assert "challenge" in response.json()["error"]
    assert not WebAuthnCredential.objects.exists()


def test_a_registration_answer_is_used_once_only(alice):
    client = signed_in(alice)
    authenticator = SoftAuthenticator()
    options = post_json(client, "/account/security/keys/options/").json()
    answer = {"name": "Blue key", "credential": authenticator.create(options)}
    assert post_json(client, "/account/security/keys/", answer).status_code == 201
    replay = post_json(client, "/account/security/keys/", answer)
    assert (replay.status_code, replay.json()["field"]) == (400, "challenge")
    assert WebAuthnCredential.objects.count() == 1


def test_an_expired_challenge_is_refused(alice, monkeypatch):
    client = signed_in(alice)
    options = post_json(client, "/account/security/keys/options/").json()
    later = timezone.now() + timedelta(minutes=6)
    monkeypatch.setattr(timezone, "now", lambda: later)
    response = post_json(
        client, "/account/security/keys/", {"name": "k", "credential": SoftAuthenticator().create(options)}
    )
    assert response.status_code == 400
    assert "expired" in response.json()["error"]


def test_an_answer_from_another_origin_or_relying_party_is_refused(alice):
    client = signed_in(alice)
    options = post_json(client, "/account/security/keys/options/").json()
    phished = SoftAuthenticator().create(options, origin="https://groundrule.evil.example")
    response = post_json(client, "/account/security/keys/", {"name": "k", "credential": phished})
    assert response.status_code == 400 and "origin" in response.json()["error"]
    options = post_json(client, "/account/security/keys/options/").json()
    other_rp = SoftAuthenticator().create(options, rp_id="evil.example")
    response = post_json(client, "/account/security/keys/", {"name": "k", "credential": other_rp})
    assert response.status_code == 400 and "RP ID" in response.json()["error"]
    assert not WebAuthnCredential.objects.exists()


def test_a_key_registered_to_someone_else_cannot_be_registered_again(alice, bob):
    authenticator = enrolled(alice)
    client = signed_in(bob)
    options = post_json(client, "/account/security/keys/options/").json()
    answer = {"name": "Mine", "credential": authenticator.create(options)}
    response = post_json(client, "/account/security/keys/", answer)
    assert response.status_code == 400
    assert "already registered" in response.json()["error"]
    assert list(WebAuthnCredential.objects.values_list("user__username", flat=True)) == ["alice"]


@override_settings(WEBAUTHN_RP_ID="groundrule.example.com", WEBAUTHN_ORIGINS=["https://groundrule.example.com"])
def test_the_relying_party_and_origins_come_from_the_settings_when_set(alice):
    client = signed_in(alice)
    options = post_json(client, "/account/security/keys/options/").json()
    assert options["rp"]["id"] == "groundrule.example.com"
    here = SoftAuthenticator(origin="http://testserver").create(options)
    assert post_json(client, "/account/security/keys/", {"name": "k", "credential": here}).status_code == 400
    options = post_json(client, "/account/security/keys/options/").json()
    there = SoftAuthenticator(origin="https://groundrule.example.com").create(options)
    assert post_json(client, "/account/security/keys/", {"name": "k", "credential": there}).status_code == 201


def test_the_endpoints_need_a_signed_in_person_and_a_post(alice):
    anonymous = Client()
    assert post_json(anonymous, "/account/security/keys/options/").status_code == 401
    assert post_json(anonymous, "/account/security/keys/", {"name": "k"}).status_code == 401
    assert signed_in(alice).get("/account/security/keys/options/").status_code == 405


# --- removing a key -----------------------------------------------------------------------------


def test_a_key_is_removed_from_the_security_page(alice):
    enrolled(alice, "Old key")
    key = WebAuthnCredential.objects.get(user=alice)
    client = signed_in(alice)
    response = client.post(f"/account/security/keys/{key.pk}/remove/", CONFIRMED, follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Security key “Old key” removed." in body
    assert "No security keys yet" in body
    assert not WebAuthnCredential.objects.exists()


def test_another_persons_key_cannot_be_removed(alice, bob, charlie):
    enrolled(alice)
    key = WebAuthnCredential.objects.get(user=alice)
    assert signed_in(bob).post(f"/account/security/keys/{key.pk}/remove/").status_code == 404
    assert signed_in(charlie).post(f"/account/security/keys/{key.pk}/remove/").status_code == 404
    assert signed_in(alice).get(f"/account/security/keys/{key.pk}/remove/").status_code == 405
    assert signed_in(alice).post("/account/security/keys/999999/remove/").status_code == 404
    assert WebAuthnCredential.objects.filter(pk=key.pk).exists()


def test_the_security_page_lists_only_the_persons_own_keys(alice, bob):
    enrolled(alice, "Alice key")
    enrolled(bob, "Bob key")
    body = signed_in(bob).get("/account/security/").content.decode()
    assert "Bob key" in body and "Alice key" not in body


# --- signing in with a key ----------------------------------------------------------------------


def test_a_password_alone_does_not_sign_in_an_account_with_a_key(alice):
    enrolled(alice)
    client, response = password_step()
    assert response.status_code == 302 and response["Location"].startswith("/accounts/two-factor/")
    assert not is_signed_in(client)
    assert client.get("/runs/").status_code == 302  # still anonymous
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b"Use your security key" in page.content
    assert b"js/webauthn.js" in page.content


def test_the_key_finishes_the_sign_in_and_goes_where_the_person_was_going(alice):
    authenticator = enrolled(alice)
    client, _ = password_step()
    response = key_step(client, authenticator)
    assert response.status_code == 200
    assert response.json() == {"redirect": "/runs/"}
    assert is_signed_in(client)
    assert client.session["two_factor_method"] == "webauthn"
    key = WebAuthnCredential.objects.get(user=alice)
    assert key.sign_count == 1 and key.last_used_at is not None
    assert client.get("/runs/").status_code == 200


def test_an_account_without_a_key_signs_in_with_its_password_alone(alice):
    client, response = password_step()
    assert response.status_code == 302 and response["Location"] == "/runs/"
    assert is_signed_in(client)


def test_the_key_step_needs_a_password_first(alice):
    authenticator = enrolled(alice)
    client = Client(REMOTE_ADDR=ADDRESS)
    response = post_json(client, "/accounts/two-factor/webauthn/options/")
    assert response.status_code == 403 and "password" in response.json()["error"]
    response = post_json(client, "/accounts/two-factor/webauthn/verify/", {"credential": {}})
    assert response.status_code == 403
    assert client.get("/accounts/two-factor/")["Location"] == "/accounts/login/"
    assert authenticator.sign_count == 0


def test_an_assertion_is_used_once_only(alice):
    authenticator = enrolled(alice)
    client, _ = password_step()
    options = post_json(client, "/accounts/two-factor/webauthn/options/").json()
    answer = {"credential": authenticator.get(options)}
    post_json(client, "/accounts/two-factor/webauthn/verify/", {"credential": {}})  # uses the challenge up
    replay = post_json(client, "/accounts/two-factor/webauthn/verify/", answer)
    assert (replay.status_code, replay.json()["field"]) == (400, "challenge")
    assert not is_signed_in(client)


def test_another_persons_key_does_not_finish_my_sign_in(alice, bob):
    enrolled(alice)
    bobs = enrolled(bob, "Bob key")
    client, _ = password_step("alice")
    response = key_step(client, bobs)
    assert response.status_code == 400
    assert response.json()["error"] == "This security key is not registered to your account."
    assert not is_signed_in(client)


def test_an_unknown_key_or_a_bad_signature_does_not_sign_in(alice):
    authenticator = enrolled(alice)
    client, _ = password_step()
    assert key_step(client, SoftAuthenticator()).status_code == 400
    options = post_json(client, "/accounts/two-factor/webauthn/options/").json()
    forged = authenticator.get(options)
    forged["response"]["signature"] = SoftAuthenticator().get(options)["response"]["signature"]
    response = post_json(client, "/accounts/two-factor/webauthn/verify/", {"credential": forged})
    assert response.status_code == 400 and "signature" in response.json()["error"]
    assert not is_signed_in(client)


@pytest.mark.parametrize("body", [b"{nope", b'"a string"', b"null"])
def test_garbage_on_the_key_step_is_a_400(alice, body):
    enrolled(alice)
    client, _ = password_step()
    post_json(client, "/accounts/two-factor/webauthn/options/")
    response = client.post("/accounts/two-factor/webauthn/verify/", body, content_type="application/json")
    assert response.status_code == 400
    assert not is_signed_in(client)


def test_a_counter_that_goes_back_is_refused_as_a_cloned_key_and_audited(alice, acme):
    authenticator = enrolled(alice)
    client, _ = password_step()
    assert key_step(client, authenticator, count=7).status_code == 200
    client, _ = password_step()
    response = key_step(client, authenticator, count=3)
    assert response.status_code == 403
    assert "counter went backwards" in response.json()["error"]
    assert not is_signed_in(client)
    assert WebAuthnCredential.objects.get(user=alice).sign_count == 7
    assert audit_actions(acme)[-1] == "accounts.two_factor.webauthn_cloned"
    with scopes_disabled():
        event = AuditEvent.objects.get(tenant=acme, action="accounts.two_factor.webauthn_cloned")
    assert (event.after["stored_sign_count"], event.after["sign_count"]) == (7, 3)


def test_a_key_without_a_counter_keeps_working(alice):
    # Passkeys that sync between devices report 0 every time: no counter, nothing to compare.
    authenticator = enrolled(alice)
    for _ in range(2):
        client, _ = password_step()
        assert key_step(client, authenticator, count=0).status_code == 200


def test_a_removed_key_no_longer_signs_in(alice):
    kept = enrolled(alice, "Kept")
    removed = enrolled(alice, "Lost")
    key = WebAuthnCredential.objects.get(user=alice, name="Lost")
    signed_in(alice).post(f"/account/security/keys/{key.pk}/remove/", CONFIRMED)
    client, _ = password_step()
    assert key_step(client, removed).status_code == 400
    assert not is_signed_in(client)
    assert key_step(client, kept).status_code == 200


@override_settings(LOGIN_FAILURE_LIMIT=2)
def test_failed_keys_count_as_failed_sign_ins_and_a_paused_account_is_refused(alice):
    authenticator = enrolled(alice)
    client, _ = password_step()
    assert key_step(client, SoftAuthenticator()).status_code == 400
    options = post_json(client, "/accounts/two-factor/webauthn/options/").json()
    response = post_json(
        client, "/accounts/two-factor/webauthn/verify/", {"credential": SoftAuthenticator().get(options)}
    )
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 15 * 60
    # Paused: even the right key is refused, before a challenge is handed out.
    refused = post_json(client, "/accounts/two-factor/webauthn/options/")
    assert refused.status_code == 429 and "Too many failed sign-ins" in refused.json()["error"]
    assert authenticator.sign_count == 0
    assert not is_signed_in(client)


def test_the_security_page_reads_all_keys_in_one_query(alice):
    # The page's other sections (authenticator app, sessions) have queries of their own: what is
    # pinned here is that the number does not grow with the keys.
    enrolled(alice, "Key 0")
    client = signed_in(alice)
    client.get("/account/security/")  # warm the session and tenant lookups
    with CaptureQueriesContext(connection) as one_key:
        client.get("/account/security/")
    for n in range(1, 5):
        enrolled(alice, f"Key {n}")
    # Each key added ended the other sessions, this one included: a fresh one, warmed the same way.
    client = signed_in(alice)
    client.get("/account/security/")
    with CaptureQueriesContext(connection) as five_keys:
        body = client.get("/account/security/").content.decode()
    assert len(five_keys) == len(one_key)
    assert body.count('action="/account/security/keys/') == 5 + 1  # five remove forms, one add form
