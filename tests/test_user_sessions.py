"""A person's signed-in sessions (docs/sign-in.md, "Signed-in sessions"): listed on the account security
page with browser, address and last use; ended one by one or all but this one; ended by a password or
second-factor change; each person reaches only their own."""

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.http import HttpResponse
from django.test import Client, RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from governance.tasks import apply_retention
from tenants import two_factor, user_sessions
from tenants.models import UserSession
from tenants.session_middleware import SessionActivityMiddleware
from tenants.signals import credentials_changed
from tenants.user_agents import describe

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct-horse-battery"  # tests/conftest.py
PAGE = "/account/security/"
CHROME_LINUX = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
FIREFOX_WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Mobile/15E148 Safari/604.1"
)


def browser(username="alice", *, agent=CHROME_LINUX, addr="203.0.113.9") -> Client:
    """A client signed in through the real sign-in form, as one browser would be."""
    client = Client(HTTP_USER_AGENT=agent, REMOTE_ADDR=addr)
    response = client.post("/accounts/login/", {"username": username, "password": PASSWORD})
    assert response.status_code == 302, response.content
    return client


def signed_in(client) -> bool:
    return client.get("/policies/").status_code == 200


def row_of(client) -> UserSession:
    return UserSession.objects.get(pk=client.session[user_sessions.ROW_KEY])


def rows_on_page(client) -> list[str]:
    page = client.get(PAGE)
    assert page.status_code == 200
    return re.findall(r'<tr id="session-(\d+)"', page.text)


class Clock:
    def __init__(self, monkeypatch):
        self.now = timezone.now()
        monkeypatch.setattr(timezone, "now", lambda: self.now)

    def advance(self, **delta):
        self.now += timedelta(**delta)


# --- the list ------------------------------------------------------------------------------------


def test_signing_in_lists_the_browser_its_address_and_how_it_signed_in(alice):
    laptop = browser(agent=CHROME_LINUX, addr="203.0.113.9")
    browser(agent=FIREFOX_WINDOWS, addr="198.51.100.7")

    page = laptop.get(PAGE).text
    section = page[page.index('id="sessions"') :]
    assert section.count('<tr id="session-') == 2
    first, second = section.split('<tr id="session-')[1:3]
    # this session first, with its badge and no End button; the other with one
    assert "Chrome 131 on Linux" in first and "This session" in first and "203.0.113.9" in first
    assert "Password" in first and ">End<" not in first
    assert "Firefox 133 on Windows" in second and "This session" not in second and "198.51.100.7" in second
    assert ">End<" in second and "End all other sessions" in section


def test_last_seen_and_signed_in_show_relative_times_with_the_exact_one_in_the_title(alice):
    laptop = browser()
    other = browser(agent=FIREFOX_WINDOWS)
    UserSession.objects.filter(pk=row_of(other).pk).update(last_seen_at=timezone.now() - timedelta(hours=3))
    row = laptop.get(PAGE).text.split(f'<tr id="session-{row_of(other).pk}"')[1].split("</tr>")[0]
    assert re.search(r'<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+">3\xa0hours ago</time>', row)


def test_no_session_key_is_ever_shown_or_stored_in_clear(alice):
    laptop, phone = browser(), browser(agent=SAFARI_IPHONE)
    page = laptop.get(PAGE).text
    for client in (laptop, phone):
        key = client.session.session_key
        assert key not in page
        assert key not in row_of(client).session_key_ciphertext
    assert "Safari 18 on iOS" in page


def test_a_person_sees_only_their_own_sessions(alice, bob):
    alices, bobs = browser("alice"), browser("bob")
    assert rows_on_page(alices) == [str(row_of(alices).pk)]
    assert rows_on_page(bobs) == [str(row_of(bobs).pk)]


def test_signing_out_removes_the_session_from_the_list(alice):
    laptop, phone = browser(), browser()
    gone = row_of(phone).pk
    phone.post("/accounts/logout/")
    assert not UserSession.objects.filter(pk=gone).exists()
    assert rows_on_page(laptop) == [str(row_of(laptop).pk)]


def test_an_expired_or_deleted_session_is_not_listed(alice):
    laptop, expired, flushed = browser(), browser(), browser()
    Session.objects.filter(session_key=expired.session.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    flushed_key = flushed.session.session_key
    flushed_row = row_of(flushed).pk
    Session.objects.filter(session_key=flushed_key).delete()

    assert rows_on_page(laptop) == [str(row_of(laptop).pk)]
    assert UserSession.objects.filter(user=alice).count() == 1  # cleaned up, not only hidden
    assert not UserSession.objects.filter(pk=flushed_row).exists()


def test_a_session_signed_in_before_sessions_were_listed_appears_on_its_next_request(alice):
    client = Client(HTTP_USER_AGENT=FIREFOX_WINDOWS)
    client.force_login(alice)
    UserSession.objects.all().delete()
    session = client.session
    del session[user_sessions.ROW_KEY], session[user_sessions.SEEN_KEY]
    session.set_expiry(None)  # as Django left it: no expiry of its own
    session.save()
    expires = Session.objects.get(session_key=session.session_key).expire_date - timedelta(days=3)
    Session.objects.filter(session_key=session.session_key).update(expire_date=expires)

    assert signed_in(client)
    assert Session.objects.get(session_key=client.session.session_key).expire_date == expires
    row = UserSession.objects.get(user=alice)
    assert row.browser == "Firefox 133 on Windows"
    assert rows_on_page(client) == [str(row.pk)]


def test_a_sign_in_finished_by_a_second_factor_says_so(alice):
    # The second step's own pages call two_factor.complete; here it runs inside the middleware directly.
    request = RequestFactory().post("/account/two-factor/verify/", HTTP_USER_AGENT=FIREFOX_WINDOWS)
    request.session = SessionStore()
    request.user = AnonymousUser()
    pending = two_factor.PendingSignIn(user=alice, backend=settings.AUTHENTICATION_BACKENDS[0], next_url="/")

    def finish(request):
        two_factor.complete(request, pending, method=two_factor.TOTP)
        return HttpResponse()

    SessionActivityMiddleware(finish)(request)
    request.session.save()

    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = request.session.session_key
    assert row_of(client).get_sign_in_method_display() == "Password and authenticator app"
    page = client.get(PAGE).text
    assert "Password and authenticator app" in page and "Firefox 133 on Windows" in page


# --- last seen: at most one write a minute -------------------------------------------------------


def test_last_seen_and_address_are_refreshed_at_most_once_a_minute(alice, monkeypatch):
    clock = Clock(monkeypatch)
    client = browser(addr="203.0.113.9")
    assert signed_in(client)
    seen = row_of(client).last_seen_at

    clock.advance(seconds=30)
    client.defaults["REMOTE_ADDR"] = "198.51.100.44"
    with CaptureQueriesContext(connection) as queries:
        assert signed_in(client)
    assert not [q for q in queries.captured_queries if "usersession" in q["sql"].lower()]
    assert row_of(client).last_seen_at == seen and row_of(client).address == "203.0.113.9"

    clock.advance(seconds=31)
    assert signed_in(client)
    row = row_of(client)
    assert row.last_seen_at == clock.now and row.address == "198.51.100.44"


def test_refreshing_last_seen_does_not_stretch_the_session_past_two_weeks_from_sign_in(alice, monkeypatch):
    clock = Clock(monkeypatch)
    signed_in_at = clock.now
    client = browser()

    def expiry():
        return Session.objects.get(session_key=client.session.session_key).expire_date

    for _ in range(3):
        clock.advance(days=4)
        assert signed_in(client)
    assert row_of(client).last_seen_at == clock.now  # used on day 12, and noted
    assert abs(expiry() - (signed_in_at + timedelta(days=14))) < timedelta(seconds=5)
    clock.now = signed_in_at + timedelta(days=14, seconds=10)
    assert not signed_in(client)


def test_rows_of_expired_sessions_are_cleared_by_the_daily_pass(alice, monkeypatch):
    clock = Clock(monkeypatch)
    idle = row_of(browser()).pk
    clock.advance(days=4)
    busy = browser()
    for _ in range(2):
        clock.advance(days=4)
        assert signed_in(busy)
    assert apply_retention().endswith("; 0 expired session rows cleared")

    clock.advance(days=2, minutes=2)  # the idle one was last seen two weeks ago: it has expired
    assert apply_retention().endswith("; 1 expired session rows cleared")
    assert signed_in(busy)
    assert list(UserSession.objects.values_list("pk", flat=True)) == [row_of(busy).pk]
    assert idle != row_of(busy).pk


def test_a_session_whose_row_is_gone_signs_out_at_its_next_refresh(alice, monkeypatch):
    clock = Clock(monkeypatch)
    laptop, phone = browser(), browser()
    assert signed_in(phone)
    UserSession.objects.filter(pk=row_of(phone).pk).update(session_key_ciphertext="written-with-a-retired-key")
    assert rows_on_page(laptop) == [str(row_of(laptop).pk)]  # its key cannot be read: not listed

    clock.advance(seconds=61)
    phone.get("/policies/")
    assert not signed_in(phone)
    assert signed_in(laptop)


def test_requests_without_a_session_cost_no_query(alice, acme_key):
    api_client = Client(HTTP_AUTHORIZATION=f"Bearer {acme_key[1]}")
    api_client.get("/api/v1/ping/")  # the first use writes the key's last_used_at
    with CaptureQueriesContext(connection) as queries:
        assert api_client.get("/api/v1/ping/").status_code == 200
    assert not [q for q in queries.captured_queries if "session" in q["sql"].lower()]


# --- ending sessions -----------------------------------------------------------------------------


def test_ending_another_session_signs_that_browser_out_on_its_next_request(alice):
    laptop, phone = browser(), browser(agent=SAFARI_IPHONE)
    assert signed_in(phone)
    target = row_of(phone).pk

    response = laptop.post(f"/account/sessions/{target}/end/")
    assert response.status_code == 302 and response["Location"] == "/account/security/#sessions"
    assert "Session ended: Safari 18 on iOS is signed out." in laptop.get(PAGE).text

    assert phone.get("/policies/")["Location"] == "/accounts/login/?next=/policies/"
    assert not UserSession.objects.filter(pk=target).exists()
    assert not Session.objects.filter(session_key=phone.session.session_key).exists()
    assert signed_in(laptop)
    assert rows_on_page(laptop) == [str(row_of(laptop).pk)]


def test_end_all_other_sessions_keeps_only_this_one(alice, bob):
    laptop, phone, tablet = browser(), browser(), browser()
    bobs = browser("bob")
    response = laptop.post("/account/sessions/end-others/")
    assert response.status_code == 302
    assert "2 other sessions ended." in laptop.get(PAGE).text
    assert not signed_in(phone) and not signed_in(tablet)
    assert signed_in(laptop) and signed_in(bobs)  # another person's sessions are theirs
    assert list(UserSession.objects.filter(user=alice).values_list("pk", flat=True)) == [row_of(laptop).pk]


def test_a_session_whose_key_rotated_can_still_be_ended_at_once(alice):
    laptop, phone = browser(), browser()
    session = laptop.session
    session.cycle_key()  # as any page that rotates the key after sign-in does
    laptop.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    assert rows_on_page(laptop)[0] == str(row_of(laptop).pk)  # still this session, rekeyed

    phone.post(f"/account/sessions/{row_of(laptop).pk}/end/")
    assert not signed_in(laptop)


def test_another_persons_session_is_a_404_and_stays_signed_in(alice, bob, charlie):
    alices, bobs, charlies = browser("alice"), browser("bob"), browser("charlie")
    for theirs in (row_of(bobs).pk, row_of(charlies).pk, 999_999):
        assert alices.post(f"/account/sessions/{theirs}/end/").status_code == 404
    assert signed_in(bobs) and signed_in(charlies)
    assert UserSession.objects.count() == 3


def test_ending_needs_a_signed_in_post_with_a_csrf_token(alice):
    laptop, phone = browser(), browser()
    target = row_of(phone).pk
    assert laptop.get(f"/account/sessions/{target}/end/").status_code == 405
    assert laptop.get("/account/sessions/end-others/").status_code == 405
    assert Client().post(f"/account/sessions/{target}/end/")["Location"].startswith("/accounts/login/")

    strict = Client(enforce_csrf_checks=True)
    strict.cookies = laptop.cookies
    assert strict.post(f"/account/sessions/{target}/end/").status_code == 403
    assert signed_in(phone)


def test_this_session_cannot_be_ended_from_the_list(alice):
    laptop = browser()
    response = laptop.post(f"/account/sessions/{row_of(laptop).pk}/end/", follow=True)
    assert "That is the session you are using: sign out to end it." in response.text
    assert signed_in(laptop)


# --- credentials changed -------------------------------------------------------------------------


def test_changing_the_password_ends_the_other_sessions_and_keeps_this_one(alice):
    laptop, phone = browser(), browser(agent=SAFARI_IPHONE)
    phone_row = row_of(phone).pk
    changed = laptop.post(
        "/accounts/password/",
        {"old_password": PASSWORD, "new_password1": "a-new-long-password", "new_password2": "a-new-long-password"},
    )
    assert changed.status_code == 302

    assert not signed_in(phone)
    assert not UserSession.objects.filter(pk=phone_row).exists()
    assert signed_in(laptop)
    page = laptop.get(PAGE).text
    assert page.count('<tr id="session-') == 1 and "This session" in page
    # the row followed the session to its new key: it can still be ended from elsewhere
    other = Client()
    assert other.post("/accounts/login/", {"username": "alice", "password": "a-new-long-password"}).status_code == 302
    other.post(f"/account/sessions/{row_of(laptop).pk}/end/")
    assert not signed_in(laptop)


def test_a_credentials_change_made_elsewhere_ends_every_session(alice):
    laptop, phone = browser(), browser()
    credentials_changed.send(sender=None, user=alice, request=None)  # an admin's reset
    assert not signed_in(laptop) and not signed_in(phone)
    assert not UserSession.objects.filter(user=alice).exists()


def test_a_credentials_change_from_one_session_ends_the_others(alice, bob):
    laptop, phone, bobs = browser(), browser(), browser("bob")
    request = RequestFactory().post("/account/two-factor/")
    request.session = laptop.session
    request.user = alice
    credentials_changed.send(sender=None, user=alice, request=request)  # as the second-factor pages send it
    assert signed_in(laptop) and not signed_in(phone) and signed_in(bobs)
    assert list(UserSession.objects.filter(user=alice).values_list("pk", flat=True)) == [row_of(laptop).pk]


# --- cookies over HTTPS --------------------------------------------------------------------------


def _production_cookie_settings() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "GOVERNANCE_SECRETS_KEY")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="0",
        HTTPS="true",
        SECRET_KEY="s" * 60,
        GOVERNANCE_SECRETS_KEY="g" * 44,
    )
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({n: getattr(s, n) for n in "
        "('SESSION_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', 'SESSION_COOKIE_SAMESITE')}))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_over_https_the_session_cookie_is_secure_httponly_and_samesite_lax(alice):
    production = _production_cookie_settings()
    assert production == {
        "SESSION_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
    }
    with override_settings(**production):
        response = Client().post("/accounts/login/", {"username": "alice", "password": PASSWORD}, secure=True)
    assert response.status_code == 302
    header = response.cookies["sessionid"].output()
    cookie = SimpleCookie(header.split(":", 1)[1].strip())["sessionid"]
    assert cookie["secure"] is True and cookie["httponly"] is True and cookie["samesite"] == "Lax"


# --- the browser's name --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        (CHROME_LINUX, "Chrome 131 on Linux"),
        (FIREFOX_WINDOWS, "Firefox 133 on Windows"),
        (SAFARI_IPHONE, "Safari 18 on iOS"),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "Version/17.6 Safari/605.1.15",
            "Safari 17 on macOS",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86",
            "Edge 131 on Windows",
        ),
        (
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.6778.81 Mobile Safari/537.36",
            "Chrome 131 on Android",
        ),
        (
            "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/130.0.0.0 Safari/537.36",
            "Chrome 130 on ChromeOS",
        ),
        (
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 "
            "Safari/537.36",
            "Chrome 131 on Linux",
        ),
        ("curl/8.5.0", "curl 8"),
        ("python-requests/2.32.3", "python-requests 2"),
        ("Mozilla/5.0 (X11; Linux x86_64)", "Unknown browser on Linux"),
        ("", ""),
    ],
)
def test_the_browser_is_named_briefly(agent, expected):
    assert describe(agent) == expected
