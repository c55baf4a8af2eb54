"""Two-factor authentication with an authenticator app and recovery codes (docs/two-factor.md):
enrolment on the account security page, the second step of a sign-in, the sign-in throttle counting
wrong codes, replays, single-use recovery codes, the audit log, and secrets that are never shown twice."""

import logging
import re

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django_scopes import scopes_disabled
from page_forms import field_errors
from two_factor_support import (
    ADDR,
    PASSWORD,
    Clock,
    code_at,
    enrol,
    leave_unconfirmed,
    password_step,
    shown_secret,
    signed_in_as,
    submit_code,
    submit_recovery_code,
)

from tenants import authenticator, services, two_factor
from tenants.audit import Actor
from tenants.models import AuditEvent, LoginThrottle, RecoveryCode, Role, TotpDevice
from tenants.signals import credentials_changed

pytestmark = pytest.mark.django_db

CODE_FORMAT = re.compile(r"^[0-9a-hjkmnp-tv-z]{5}-[0-9a-hjkmnp-tv-z]{5}$")


def actions(tenant) -> list[str]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq").values_list("action", flat=True))


def shown_codes(page: str) -> list[str]:
    block = re.search(r'data-testid="recovery-codes">(.*?)</ol>', page, re.S)
    assert block, "no recovery codes on the page"
    return re.findall(r"<li>([^<]+)</li>", block.group(1))


@pytest.fixture
def changes():
    seen: list[tuple[str, bool]] = []

    def listen(sender, user, request, **kwargs):
        seen.append((user.get_username(), request is not None))

    credentials_changed.connect(listen)
    yield seen
    credentials_changed.disconnect(listen)


# --- enrolment -------------------------------------------------------------------------------------


def test_enrolment_shows_qr_and_secret_then_ten_recovery_codes_once(alice, acme, changes, caplog):
    caplog.set_level(logging.DEBUG)
    client = Client()
    client.force_login(alice)
    security = client.get("/account/security/")
    assert "Set up an authenticator app" in security.text and "badge-off" in security.text

    started = client.post("/account/two-factor/start/")
    assert started.status_code == 302 and started["Location"] == "/account/two-factor/setup/"
    setup = client.get("/account/two-factor/setup/")
    assert setup.status_code == 200 and "no-store" in setup["Cache-Control"]
    assert "<svg" in setup.text and "<?xml" not in setup.text
    secret = shown_secret(setup.text)
    assert len(secret) == 32
    assert re.search(r'data-testid="totp-secret">(\w{4} ){7}\w{4}<', setup.text)  # typed in groups of four

    done = client.post("/account/two-factor/setup/", {"code": code_at(secret)})
    assert done.status_code == 200 and "no-store" in done["Cache-Control"]
    codes = shown_codes(done.text)
    assert len(codes) == 10 and len(set(codes)) == 10 and all(CODE_FORMAT.match(c) for c in codes)
    assert two_factor.enrolled_methods(alice) == [two_factor.TOTP, two_factor.RECOVERY_CODE]
    assert actions(acme)[-1] == "accounts.two_factor.enrolled"
    assert changes == [("alice", True)]

    # Never again: not on the setup page, the security page, in the rows or in the logs.
    assert client.get("/account/two-factor/setup/")["Location"] == "/account/security/"
    after = client.get("/account/security/")
    assert "badge-on" in after.text and "10 unused recovery codes left" in after.text
    for page in (after.text, client.get("/").text):
        assert secret not in page and not any(c in page for c in codes)
    stored = TotpDevice.objects.get(user=alice)
    assert secret not in stored.secret_ciphertext and authenticator.secret_of(stored) == secret
    hashes = " ".join(RecoveryCode.objects.filter(user=alice).values_list("code_hash", flat=True))
    assert not any(c in hashes or c.replace("-", "") in hashes for c in codes)
    with scopes_disabled():
        audit_text = str(list(AuditEvent.objects.filter(tenant=acme).values("before", "after")))
    assert secret not in audit_text
    assert secret not in caplog.text and not any(c in caplog.text for c in codes)


def test_a_wrong_or_malformed_confirmation_code_is_refused_naming_the_field(alice):
    client = Client()
    client.force_login(alice)
    client.post("/account/two-factor/start/")
    secret = shown_secret(client.get("/account/two-factor/setup/").text)
    wrong = str((int(code_at(secret)) + 1) % 1_000_000).zfill(6)
    for value, message in [("", "This field is required."), ("12ab", "6-digit"), (wrong, "not right")]:
        page = client.post("/account/two-factor/setup/", {"code": value})
        assert page.status_code == 400
        assert any(message in e for e in field_errors(page.text, "code")), (value, field_errors(page.text, "code"))
    assert not two_factor.has_second_factor(alice)
    assert not RecoveryCode.objects.filter(user=alice).exists()


def test_setting_up_again_while_enrolled_is_refused_and_keeps_the_app(alice):
    secret, _ = enrol(alice)
    client = Client()
    client.force_login(alice)
    response = client.post("/account/two-factor/start/", follow=True)
    assert "already set up" in response.text
    assert authenticator.secret_of(TotpDevice.objects.get(user=alice)) == secret


# --- signing in --------------------------------------------------------------------------------------


def test_password_alone_no_longer_signs_in_the_code_finishes(alice):
    secret, _ = enrol(alice)
    client = Client()
    response = password_step(client, next_url="/runs/")
    assert response.status_code == 302 and response["Location"] == "/accounts/two-factor/"
    assert signed_in_as(client) is None
    assert client.get("/runs/")["Location"].startswith("/accounts/login/")
    page = client.get("/accounts/two-factor/")
    assert page.status_code == 200 and 'name="code"' in page.text and 'name="recovery_code"' in page.text
    finished = submit_code(client, code_at(secret, steps=1))
    assert finished.status_code == 302 and finished["Location"] == "/runs/"
    assert signed_in_as(client) == str(alice.pk)
    assert client.get("/runs/").status_code == 200


def test_accounts_without_a_second_factor_sign_in_with_the_password_alone(bob):
    client = Client()
    response = password_step(client, "bob")
    assert response.status_code == 302 and response["Location"] == "/"
    assert signed_in_as(client) is not None


def test_a_wrong_code_is_refused_and_counted(alice):
    secret, _ = enrol(alice)
    client = Client()
    password_step(client)
    wrong = str((int(code_at(secret)) + 500_000) % 1_000_000).zfill(6)
    refused = submit_code(client, wrong)
    assert refused.status_code == 400 and signed_in_as(client) is None
    assert any("not right" in e for e in field_errors(refused.text, "code"))
    assert max(LoginThrottle.objects.values_list("failures", flat=True)) == 1
    # The right code still finishes, and clears this account's count as a password does.
    assert submit_code(client, code_at(secret, steps=1)).status_code == 302
    assert signed_in_as(client) == str(alice.pk)


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_enough_wrong_codes_pause_the_sign_in_and_even_the_right_code_is_refused(alice):
    secret, codes = enrol(alice)
    client = Client()
    password_step(client)
    wrong = str((int(code_at(secret)) + 500_000) % 1_000_000).zfill(6)
    assert submit_code(client, wrong).status_code == 400
    assert submit_code(client, wrong).status_code == 400
    paused = submit_code(client, wrong)
    assert paused.status_code == 429 and "Too many sign-in attempts" in paused.text
    assert "finish signing in with" in paused.text  # the way out, below
    assert 0 < int(paused["Retry-After"]) <= 15 * 60
    assert submit_code(client, code_at(secret, steps=1)).status_code == 429
    assert signed_in_as(client) is None
    # The password is paused too from this address.
    assert password_step(Client()).status_code == 429
    # A recovery code still finishes the sign-in that is under way (docs/two-factor.md).
    finished = submit_recovery_code(client, codes[0])
    assert finished.status_code == 302 and signed_in_as(client) == str(alice.pk)


@override_settings(LOGIN_FAILURE_LIMIT=2)
def test_a_wrong_recovery_code_during_a_pause_ends_the_half_sign_in(alice):
    secret, codes = enrol(alice)
    client = Client()
    password_step(client)
    wrong = str((int(code_at(secret)) + 500_000) % 1_000_000).zfill(6)
    submit_code(client, wrong)
    assert submit_code(client, wrong).status_code == 429
    assert submit_recovery_code(client, "aaaaa-bbbbb").status_code == 429
    # One guess: the sign-in is gone, and a right recovery code now needs the password again.
    gone = submit_recovery_code(client, codes[0])
    assert gone.status_code == 302 and gone["Location"] == "/accounts/login/"
    assert signed_in_as(client) is None
    assert RecoveryCode.objects.filter(user=alice, used_at__isnull=True).count() == 10


def test_a_code_is_accepted_once(alice, monkeypatch):
    clock = Clock(monkeypatch)
    secret, _ = enrol(alice)
    clock.advance(seconds=30)
    first = Client()
    password_step(first)
    code = code_at(secret, clock)
    assert submit_code(first, code).status_code == 302
    replay = Client()
    password_step(replay)
    refused = submit_code(replay, code)
    assert refused.status_code == 400 and signed_in_as(replay) is None
    # An older code than the last one accepted is refused too, though still inside the window.
    assert submit_code(replay, code_at(secret, clock, steps=-1)).status_code == 400
    clock.advance(seconds=30)
    assert submit_code(replay, code_at(secret, clock)).status_code == 302


def test_codes_from_far_outside_the_window_are_refused(alice, monkeypatch):
    clock = Clock(monkeypatch)
    secret, _ = enrol(alice)
    clock.advance(minutes=5)
    client = Client()
    password_step(client)
    assert submit_code(client, code_at(secret, clock, steps=-3)).status_code == 400
    assert submit_code(client, code_at(secret, clock, steps=3)).status_code == 400
    assert submit_code(client, code_at(secret, clock, steps=1)).status_code == 302  # a fast phone


def test_a_recovery_code_works_once(alice, acme, globex):
    services.membership_set(tenant=globex, user=alice, role=Role.VIEWER, actor=Actor.system("tests"))
    _, codes = enrol(alice)
    client = Client()
    password_step(client)
    finished = submit_recovery_code(client, codes[3].upper().replace("-", " "))  # as a person might type it
    assert finished.status_code == 302 and signed_in_as(client) == str(alice.pk)
    assert "9 left" in client.get("/account/security/").text
    for tenant in (acme, globex):  # the log is per workspace: each of hers records it
        assert actions(tenant)[-1] == "accounts.two_factor.recovery_code_used"

    again = Client()
    password_step(again)
    refused = submit_recovery_code(again, codes[3])
    assert refused.status_code == 400 and signed_in_as(again) is None
    assert any("used already" in e for e in field_errors(refused.text, "recovery_code"))
    assert LoginThrottle.objects.filter(failures=1).exists()
    assert submit_recovery_code(again, codes[4]).status_code == 302


def test_the_half_sign_in_expires(alice, monkeypatch):
    clock = Clock(monkeypatch)
    secret, _ = enrol(alice)
    client = Client()
    password_step(client)
    clock.advance(minutes=6)
    response = submit_code(client, code_at(secret, clock))
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert signed_in_as(client) is None
    assert "took too long" in client.get("/accounts/login/").text
    assert client.get("/accounts/two-factor/")["Location"] == "/accounts/login/"


def test_the_second_step_without_a_password_first_goes_back_to_sign_in(alice):
    enrol(alice)
    client = Client()
    assert client.get("/accounts/two-factor/")["Location"] == "/accounts/login/"
    assert submit_code(client, "123456")["Location"] == "/accounts/login/"
    assert submit_recovery_code(client, "aaaaa-bbbbb")["Location"] == "/accounts/login/"


def test_cancel_forgets_the_half_sign_in(alice):
    secret, _ = enrol(alice)
    client = Client()
    password_step(client)
    assert client.post("/accounts/two-factor/cancel/")["Location"] == "/accounts/login/"
    assert submit_code(client, code_at(secret, steps=1))["Location"] == "/accounts/login/"
    assert signed_in_as(client) is None


@pytest.mark.parametrize(
    ("url", "field", "value"),
    [
        ("/accounts/two-factor/", "code", ""),
        ("/accounts/two-factor/", "code", "abcdef"),
        ("/accounts/two-factor/", "code", "1" * 500),
        ("/accounts/two-factor/", "code", "12\x003456"),
        ("/accounts/two-factor/recovery/", "recovery_code", ""),
        ("/accounts/two-factor/recovery/", "recovery_code", "zz"),
        ("/accounts/two-factor/recovery/", "recovery_code", "ééééé-ééééé"),
        ("/accounts/two-factor/recovery/", "recovery_code", "x" * 5000),
    ],
)
def test_malformed_codes_are_a_400_naming_the_field_and_not_counted(alice, url, field, value):
    enrol(alice)
    client = Client()
    password_step(client)
    response = client.post(url, {field: value}, REMOTE_ADDR=ADDR)
    assert response.status_code == 400
    assert field_errors(response.text, field)
    assert not LoginThrottle.objects.exists()
    assert signed_in_as(client) is None


# --- recovery codes and removal ----------------------------------------------------------------------


def test_new_recovery_codes_need_a_code_or_the_password_and_replace_the_old(alice, acme, changes):
    _, old = enrol(alice)
    client = Client()
    client.force_login(alice)
    leave_unconfirmed(client)
    url = "/account/two-factor/recovery-codes/"
    refused = client.post(url, {"regenerate-confirmation": "not-it"}, REMOTE_ADDR=ADDR)
    assert refused.status_code == 400
    assert field_errors(refused.text, "regenerate-confirmation") == [
        "That is neither a current authenticator code nor your password."
    ]
    assert LoginThrottle.objects.filter(failures=1).exists()  # counted: a left-open screen cannot guess
    empty = client.post(url, {"regenerate-confirmation": ""}, REMOTE_ADDR=ADDR)
    assert empty.status_code == 400 and field_errors(empty.text, "regenerate-confirmation")

    page = client.post(url, {"regenerate-confirmation": PASSWORD}, REMOTE_ADDR=ADDR)
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    new = shown_codes(page.text)
    assert len(new) == 10 and not set(new) & set(old)
    assert actions(acme)[-1] == "accounts.two_factor.recovery_codes_regenerated"
    assert changes[-1] == ("alice", True)
    assert not authenticator.recovery_code_use(user=alice, code=old[0])
    assert authenticator.recovery_code_use(user=alice, code=new[0])


def test_removing_the_app_needs_a_current_code_and_then_the_password_alone_signs_in(alice, acme, changes):
    secret, _ = enrol(alice)
    client = Client()
    client.force_login(alice)
    leave_unconfirmed(client)
    refused = client.post("/account/two-factor/remove/", {"remove-confirmation": "000000"}, REMOTE_ADDR=ADDR)
    assert refused.status_code == 400 and field_errors(refused.text, "remove-confirmation")
    assert TotpDevice.objects.filter(user=alice).exists()
    removed = client.post(
        "/account/two-factor/remove/", {"remove-confirmation": code_at(secret, steps=1)}, REMOTE_ADDR=ADDR
    )
    assert removed.status_code == 302
    assert not TotpDevice.objects.filter(user=alice).exists()
    assert not RecoveryCode.objects.filter(user=alice).exists()
    assert actions(acme)[-1] == "accounts.two_factor.removed"
    assert changes[-1] == ("alice", True)
    fresh = Client()
    assert password_step(fresh)["Location"] == "/"
    assert signed_in_as(fresh) == str(alice.pk)


def test_the_command_resets_a_person_who_lost_everything(alice, acme, changes, capsys):
    enrol(alice)
    call_command("reset_two_factor", "alice")
    assert "1 authenticator app, 10 recovery codes" in capsys.readouterr().out
    assert not two_factor.has_second_factor(alice)
    with scopes_disabled():
        event = AuditEvent.objects.filter(tenant=acme).order_by("seq").last()
    assert event.action == "accounts.two_factor.reset" and event.actor_label == "manage.py reset_two_factor"
    assert changes[-1] == ("alice", False)  # no session of hers made it: all of them end


def test_the_command_names_an_unknown_account():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No account named 'nobody'"):
        call_command("reset_two_factor", "nobody")


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_a_right_password_does_not_clear_the_count_until_the_second_factor(alice):
    secret, _ = enrol(alice)
    for _ in range(2):
        assert password_step(Client(), password="wrong-password").status_code == 200
    client = Client()
    assert password_step(client)["Location"] == "/accounts/two-factor/"
    wrong = str((int(code_at(secret)) + 500_000) % 1_000_000).zfill(6)
    assert submit_code(client, wrong).status_code == 429  # the third failure, password or code


def test_the_second_step_keeps_next_only_when_it_is_on_this_site(alice):
    secret, _ = enrol(alice)
    client = Client()
    password_step(client, next_url="https://evil.example/")
    assert submit_code(client, code_at(secret, steps=1))["Location"] == "/"
