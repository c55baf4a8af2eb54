"""The overview reads a whole past day's violation counts once, then from the cache; the partial first
day and today stay live, a retention pass never leaves a deleted day counted, and a cache that does
not answer only makes the page slower (governance/selectors/overview_days.py)."""

import html as html_lib
import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from django_scopes import scopes_disabled
from pages_support import bulk_violations, signed_in

from governance import retention
from governance.models import Evaluation, Run
from tenants import services as tenant_services
from tenants.audit import Actor

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


def _stat(html: str, label: str) -> int:
    match = re.search(rf'<span class="gr-stat-label">{label}</span><span class="gr-stat-value">(\d+)</span>', html)
    return int(match.group(1))


def _listed(client, html: str, label: str) -> int:
    """How many rows the list a number links to holds."""
    href = re.search(rf'<a class="gr-stat[^"]*" href="([^"]+)"><span class="gr-stat-label">{label}</span>', html)
    page = client.get(html_lib.unescape(href.group(1))).content.decode()
    return len(re.findall(r'<a href="/violations/(\d+)/" aria-label', page))


def _days_ago(tenant, days: float, *, count: int, agent: str = "bulk-agent") -> Run:
    """A run that started `days` ago with `count` evaluations a second apart (warn, block, allow)."""
    at = timezone.now() - timedelta(days=days)
    with scopes_disabled():
        run = Run.objects.create(tenant=tenant, agent_name=agent)
        Run.objects.filter(pk=run.pk).update(started_at=at)
    bulk_violations(tenant, count=count, run=run, agent=agent, start=at)
    return run


def _violations(client) -> tuple[int, int, str]:
    html = client.get("/?period=30d").content.decode()
    return _stat(html, "Violations"), _listed(client, html, "Violations"), html


def test_a_past_day_is_counted_once_and_today_stays_live(alice, acme):
    _days_ago(acme, 3, count=30)  # 20 violations
    _days_ago(acme, 0.001, count=6)  # 4, a minute and a half ago
    client = signed_in(alice)
    assert _violations(client)[:2] == (24, 24)

    bulk_violations(acme, count=3, agent="late-agent")  # today: counted at once
    shown, listed, html = _violations(client)
    assert shown == listed == 26
    assert "late-agent" in html

    # The day three days ago is read from the cache now: a row removed behind the overview's back
    # (nothing in Groundrule does that but retention, tested below) is still counted.
    with scopes_disabled():
        Evaluation.objects.filter(created_at__lt=timezone.now() - timedelta(days=2)).delete()
    assert _violations(client)[:2] == (26, 6)


def test_a_shorter_period_keeps_the_longer_periods_days(alice, acme, monkeypatch):
    _days_ago(acme, 20, count=30)  # 20 violations
    client = signed_in(alice)
    assert _violations(client)[:2] == (20, 20)  # the 30-day view caches that day
    # A day later the 7-day view caches the day that has just ended: the 30-day view's days stay.
    later = timezone.now() + timedelta(days=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    client.get("/?period=7d")
    with scopes_disabled():
        Evaluation.objects.filter(created_at__lt=later - timedelta(days=10)).delete()
    assert _violations(client)[:2] == (20, 0)  # still read from the cache, not counted again


def test_the_cached_counts_are_the_live_ones(alice, acme):
    for days in (29.5, 12, 3, 1.2):
        _days_ago(acme, days, count=9, agent=f"agent-{int(days)}")
    client = signed_in(alice)

    def page() -> str:  # less what changes with each request: the CSRF token, the minute in the links
        html = client.get("/?period=30d").content.decode()
        return re.sub(r'(CSRFToken": "|value=")\w{64}|since=[\w%:-]+', "", html)

    cold, warm = page(), page()
    cache.clear()
    assert warm == cold == page()
    assert _stat(warm, "Violations") == _listed(client, warm, "Violations") == 24


def test_a_retention_pass_never_leaves_a_deleted_day_counted(alice, acme):
    _days_ago(acme, 10, count=30)  # 20 violations, past a 7-day retention
    _days_ago(acme, 2, count=3)  # 2, kept
    client = signed_in(alice)
    assert _violations(client)[:2] == (22, 22)  # ten days ago is cached now

    tenant_services.tenant_set_retention(
        tenant=acme, retention_days=7, audit_retention_days=None, actor=Actor.system("tests")
    )
    [result] = retention.retention_apply()
    assert result.removed["governance.evaluation"] == 30

    assert _violations(client)[:2] == (2, 2)


def test_a_cache_that_does_not_answer_only_makes_the_page_slower(alice, acme, settings):
    _days_ago(acme, 3, count=30)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    client = signed_in(alice)
    for _ in range(2):
        assert _violations(client)[:2] == (20, 20)


def test_another_tenants_cached_days_are_never_counted(alice, charlie, acme, globex):
    _days_ago(globex, 3, count=30)
    assert _violations(signed_in(charlie))[0] == 20
    _days_ago(acme, 3, count=3)
    assert _violations(signed_in(alice))[:2] == (2, 2)
