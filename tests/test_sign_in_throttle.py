"""Dashboard sign-in throttling (tenants/login_throttle.py): limits per account from one address, per
address and per account, a pause that attempts cannot extend, and client addresses read through the
configured number of trusted proxies only."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client, RequestFactory, override_settings
from django.utils import timezone

from core.client_address import client_address
from tenants.models import LoginThrottle

pytestmark = pytest.mark.django_db

RIGHT, WRONG = "correct-horse-battery", "wrong-password"
PROXY = "127.0.0.1"  # the reverse proxy in front of the server, as REMOTE_ADDR shows it


def sign_in(password, *, username="alice", addr="203.0.113.9", forwarded=None):
    headers = {"REMOTE_ADDR": addr}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password}, **headers)
    return response, client


def status(password, **where):
    return sign_in(password, **where)[0].status_code


class Clock:
    """Moves Django's notion of now, for the pauses measured in minutes."""

    def __init__(self, monkeypatch):
        self.now = timezone.now()
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def advance(self, **delta):
        self.now += timedelta(**delta)


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_repeated_failed_sign_ins_pause_that_account_from_that_address(alice):
    assert status(WRONG) == 200  # the form again, with its error
    assert status(WRONG) == 200
    paused = sign_in(WRONG)[0]
    assert paused.status_code == 429
    assert b"Too many sign-in attempts" in paused.content
    assert 0 < int(paused["Retry-After"]) <= 15 * 60
    # Paused: even the right password is refused, and no session is made.
    refused, client = sign_in(RIGHT)
    assert refused.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address, or another account from the same address, is not paused.
    assert status(RIGHT, addr="198.51.100.7") == 302


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_a_successful_sign_in_resets_the_count(alice):
    for _ in range(2):
        sign_in(WRONG)
    assert status(RIGHT) == 302
    for _ in range(2):
        assert status(WRONG) == 200


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_attempts_during_a_pause_do_not_extend_it(alice, monkeypatch):
    clock = Clock(monkeypatch)
    for _ in range(3):
        sign_in(WRONG)
    assert status(RIGHT) == 429
    # Twenty more tries spread over the pause, wrong and right: all refused, none counted.
    for i in range(20):
        clock.advance(seconds=44)
        assert status(WRONG if i % 2 else RIGHT) == 429
    clock.advance(minutes=15 - 20 * 44 / 60, seconds=1)  # 15 minutes after the failure that paused it
    assert status(RIGHT) == 302


@override_settings(LOGIN_FAILURE_LIMIT=3, TRUSTED_PROXY_COUNT=1)
def test_behind_a_trusted_proxy_an_attackers_address_does_not_pause_the_account_elsewhere(alice):
    for _ in range(10):
        sign_in(WRONG, addr=PROXY, forwarded="203.0.113.9")
    assert status(RIGHT, addr=PROXY, forwarded="203.0.113.9") == 429
    # The person, through the same proxy from their own address, signs in.
    assert status(RIGHT, addr=PROXY, forwarded="198.51.100.7") == 302


@override_settings(LOGIN_FAILURE_LIMIT=3, TRUSTED_PROXY_COUNT=1)
def test_behind_a_proxy_a_client_cannot_choose_its_address_by_prepending_one(alice):
    # The proxy appends the address it saw; what the client wrote before it is not believed.
    for i in range(3):
        sign_in(WRONG, addr=PROXY, forwarded=f"10.9.9.{i}, 203.0.113.9")
    assert status(RIGHT, addr=PROXY, forwarded="10.9.9.77, 203.0.113.9") == 429


@override_settings(LOGIN_FAILURE_LIMIT=3, TRUSTED_PROXY_COUNT=0)
def test_without_trusted_proxies_a_forged_forwarded_header_changes_nothing(alice):
    for i in range(3):
        sign_in(WRONG, forwarded=f"198.51.100.{i}")
    assert status(RIGHT, forwarded="192.0.2.200") == 429
    assert status(RIGHT) == 429


@override_settings(LOGIN_FAILURE_LIMIT=5, LOGIN_ACCOUNT_FAILURE_LIMIT=4)
def test_an_account_guessed_at_from_many_addresses_allows_each_address_one_failure(alice):
    assert [status(WRONG, addr=addr) for addr in ("203.0.113.1",) * 2 + ("203.0.113.2",) * 2] == [200, 200, 200, 429]
    # Four failures across addresses put the account under attack: each address that failed is
    # paused, and a fresh one gets a single failure.
    assert status(WRONG, addr="203.0.113.3") == 429
    assert status(RIGHT, addr="203.0.113.3") == 429
    # The person, from an address that has not failed, still signs in with the right password.
    assert status(RIGHT, addr="198.51.100.7") == 302


@override_settings(LOGIN_ADDRESS_FAILURE_LIMIT=4)
def test_one_address_spraying_many_accounts_is_paused_for_all_of_them(alice):
    for name in ("bob", "carol", "dave", "erin"):
        sign_in(WRONG, username=name)
    assert status(RIGHT) == 429
    assert status(RIGHT, addr="198.51.100.7") == 302


@override_settings(LOGIN_FAILURE_LIMIT=2)
def test_an_admin_can_clear_a_persons_pause_from_the_shell(alice, capsys):
    for _ in range(2):
        sign_in(WRONG)
    assert status(RIGHT) == 429

    call_command("unlock_sign_in", "Alice")

    assert "Cleared 2 sign-in counts for Alice." in capsys.readouterr().out
    assert status(RIGHT) == 302


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_the_counts_hold_no_typed_usernames_or_addresses(alice):
    sign_in(WRONG, username="hunter2-typed-in-the-wrong-field")
    stored = " ".join(f"{row.account} {row.address}" for row in LoginThrottle.objects.all())
    assert LoginThrottle.objects.count() == 3
    assert "hunter2" not in stored and "203.0.113.9" not in stored


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_spent_counts_are_cleared_by_the_daily_pass(alice, monkeypatch):
    from tenants.login_throttle import clear_expired

    clock = Clock(monkeypatch)
    for _ in range(3):
        sign_in(WRONG)
    assert clear_expired() == 0  # the pause still holds
    clock.advance(minutes=16)
    assert clear_expired() == 3
    assert status(RIGHT) == 302


@pytest.mark.parametrize(
    "trusted, forwarded, expected",
    [
        (0, "198.51.100.7", "127.0.0.1"),
        (1, "198.51.100.7", "198.51.100.7"),
        (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),
        (2, "6.6.6.6, 198.51.100.7, 10.0.0.3", "198.51.100.7"),
        (2, "198.51.100.7", "127.0.0.1"),  # fewer entries than proxies: not through them all
        (1, "not-an-address", "127.0.0.1"),
        (1, "2001:db8::1", "2001:db8::1"),
        (1, "", "127.0.0.1"),
    ],
)
def test_the_client_address_is_read_through_the_trusted_proxies_only(settings, trusted, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = trusted
    request = RequestFactory().get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected
