"""The overview's warning and blocking evaluations per hour or day, per policy and per agent, with the
counts of whole past days kept in the cache (docs/benchmarks.md, `bench/pages_at_volume.py`).

Counting 30 days of a busy tenant reads every violation of the month, some 300,000 index entries for
one with a million evaluations; a past day's counts never change, so the page reads them once a day
and then only the partial first day and today. What makes a past day's counts final:

* an evaluation is stored with the time it is written: none is ever added to a past day (a day is
  cached only `SETTLE` after it ended, so a write that took its time before midnight and committed
  after it, or a read replica that lags behind, is counted);
* only retention deletes evaluations, those of runs that ended (or went idle) before its cutoff
  C = now − retention_days, so only days starting after C plus a day (a judge's late verdict on a run
  that ended just before C) are cached; a shorter retention takes effect at once, as it moves C.

Runs are not cached: a run's final action changes when it completes, after the day it started.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.core.cache import cache
from django.db.models import Count, Q
from django.db.models.functions import Trunc

from core.soft_cache import cache_failed

from ..models import Evaluation
from .lists import VIOLATION_ACTIONS

DAY = timedelta(days=1)
SETTLE = timedelta(hours=1)
CACHE_SECONDS = 24 * 3600
# The longest period the overview shows (governance/selectors/overview.py PERIODS), and a day more.
KEPT = timedelta(days=31)
COLUMNS = ("policy_name", "agent_name")
USE = "overview day counts"


@dataclass
class ViolationCounts:
    """Counts by action: per bucket start, and per policy and per agent name over the whole period."""

    per_bucket: dict[datetime, Counter] = field(default_factory=lambda: defaultdict(Counter))
    by_name: dict[str, dict[str, Counter]] = field(
        default_factory=lambda: {column: defaultdict(Counter) for column in COLUMNS}
    )


def as_utc(value) -> datetime:
    if isinstance(value, str):  # some backends hand back text for truncated datetimes
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _cacheable_days(tenant, since: datetime, now: datetime) -> list[datetime]:
    """The whole days inside [since, now] whose counts are final (see the module's docstring)."""
    first = since.replace(hour=0, minute=0, second=0, microsecond=0)
    if first < since:
        first += DAY
    if tenant.retention_days is not None:
        horizon = now - timedelta(days=tenant.retention_days) + DAY
        while first < horizon:
            first += DAY
    days = []
    while first + DAY <= now - SETTLE:
        days.append(first)
        first += DAY
    return days


def _key(tenant) -> str:
    # The tenant's creation time too: an id that comes back (a restored database, a test's rollback)
    # never reads another tenant's days.
    return f"overview-days:{tenant.pk}:{tenant.created_at.timestamp():.6f}"


def _read(key: str) -> dict:
    try:
        return cache.get(key) or {}
    except Exception as exc:
        cache_failed(USE, exc)
        return {}


def _write(key: str, value: dict) -> None:
    try:
        cache.set(key, value, timeout=CACHE_SECONDS)
    except Exception as exc:
        cache_failed(USE, exc)


def _live_ranges(since: datetime, now: datetime, known: list[datetime]) -> Q:
    """[since, now] less the known days, as an OR of ranges on created_at (known is sorted)."""
    ranges, start = Q(pk__in=[]), since
    for day in known:
        if start < day:
            ranges |= Q(created_at__gte=start, created_at__lt=day)
        start = day + DAY
    return ranges | Q(created_at__gte=start, created_at__lte=now)


def violations_by_bucket(*, tenant, since: datetime, now: datetime, unit: str) -> ViolationCounts:
    """Warns and blocks that are not shadow verdicts, created in [since, now]: per hour or day (by
    `unit`), per policy and per agent. Two queries, whatever the volume and whatever is cached."""
    cacheable = _cacheable_days(tenant, since, now) if unit == "day" else []
    key = _key(tenant)
    stored = _read(key) if cacheable else {}
    known = [day for day in cacheable if day.isoformat() in stored]
    counts = ViolationCounts()
    for day in known:
        for column, rows in stored[day.isoformat()].items():
            for name, action, n in rows:
                counts.by_name[column][name][action] += n
                if column == COLUMNS[0]:
                    counts.per_bucket[day][action] += n

    violations = Evaluation.objects.filter(
        _live_ranges(since, now, known), tenant=tenant, action__in=VIOLATION_ACTIONS, shadow=False
    )
    fresh: dict[datetime, dict[str, list]] = {day: {c: [] for c in COLUMNS} for day in cacheable if day not in known}
    for column in COLUMNS:
        rows = (
            violations.annotate(bucket=Trunc("created_at", unit, tzinfo=UTC))
            .values("bucket", "action", column)
            .annotate(n=Count("action"))
            .order_by()
        )
        for row in rows:
            bucket, name, action, n = as_utc(row["bucket"]), row[column], row["action"], row["n"]
            counts.by_name[column][name][action] += n
            if column == COLUMNS[0]:
                counts.per_bucket[bucket][action] += n
            if bucket in fresh:
                fresh[bucket][column].append((name, action, n))
    if fresh:
        # Keep every day a longer period still reads (the 7-day view must not evict the 30-day
        # view's days); drop only those past the longest one.
        oldest = now - KEPT
        days = {day: rows for day, rows in stored.items() if as_utc(day) >= oldest}
        days.update({day.isoformat(): rows for day, rows in fresh.items()})
        _write(key, days)
    return counts
