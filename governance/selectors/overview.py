"""Overview: runs, warns and blocks per hour or day, and the most violated policies and agents."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Count, Q
from django.db.models.functions import Trunc
from django.utils import timezone

from ..models import Action, Evaluation, Run
from .lists import VIOLATION_ACTIONS

PERIODS = {
    "24h": (timedelta(hours=24), "hour", "Last 24 hours"),
    "7d": (timedelta(days=7), "day", "Last 7 days"),
    "30d": (timedelta(days=30), "day", "Last 30 days"),
}
DEFAULT_PERIOD = "24h"
TOP_N = 5


@dataclass
class Bucket:
    starts: datetime
    runs: int = 0
    warns: int = 0
    blocks: int = 0


@dataclass
class OverviewStats:
    period: str
    label: str
    since: datetime
    unit: str
    buckets: list[Bucket]
    top_policies: list[dict]
    top_agents: list[dict]

    @property
    def runs(self) -> int:
        return sum(b.runs for b in self.buckets)

    @property
    def warns(self) -> int:
        return sum(b.warns for b in self.buckets)

    @property
    def blocks(self) -> int:
        return sum(b.blocks for b in self.buckets)

    @property
    def violations(self) -> int:
        return self.warns + self.blocks

    def chart_data(self) -> dict:
        fmt = "%H:%M" if self.unit == "hour" else "%b %d"
        return {
            "labels": [b.starts.strftime(fmt) for b in self.buckets],
            "runs": [b.runs for b in self.buckets],
            "warns": [b.warns for b in self.buckets],
            "blocks": [b.blocks for b in self.buckets],
        }


def _floor(moment: datetime, unit: str) -> datetime:
    moment = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if unit == "day" else moment


def _as_utc(value) -> datetime:
    if isinstance(value, str):  # some backends hand back text for truncated datetimes
        value = datetime.fromisoformat(value)
    if timezone.is_naive(value):
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def overview_stats(*, tenant, period: str, now: datetime | None = None) -> OverviewStats:
    """Runs, warns and blocks per hour or day, and the most violated policies and agents. Four queries.

    Warns and blocks count evaluations, as the violations list does, so each number links to a
    list showing exactly that many rows.
    """
    if period not in PERIODS:
        period = DEFAULT_PERIOD
    span, unit, label = PERIODS[period]
    now = now or timezone.now()
    # Whole minutes, so the `since` in the links to the violations list reproduces the same set.
    since = (now - span).astimezone(UTC).replace(second=0, microsecond=0)

    buckets: dict[datetime, Bucket] = {}
    cursor = _floor(since, unit)
    step = timedelta(hours=1) if unit == "hour" else timedelta(days=1)
    while cursor <= now:
        buckets[cursor] = Bucket(starts=cursor)
        cursor += step

    runs = (
        Run.objects.filter(tenant=tenant, started_at__gte=since, started_at__lte=now)
        .annotate(bucket=Trunc("started_at", unit, tzinfo=UTC))
        .values("bucket")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in runs:
        bucket = buckets.get(_as_utc(row["bucket"]))
        if bucket:
            bucket.runs += row["n"]

    violations = Evaluation.objects.filter(
        tenant=tenant, created_at__gte=since, created_at__lte=now, action__in=VIOLATION_ACTIONS
    )
    per_bucket = (
        violations.annotate(bucket=Trunc("created_at", unit, tzinfo=UTC))
        .values("bucket", "action")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in per_bucket:
        bucket = buckets.get(_as_utc(row["bucket"]))
        if bucket:
            if row["action"] == Action.BLOCK:
                bucket.blocks += row["n"]
            else:
                bucket.warns += row["n"]

    def top(column: str) -> list[dict]:
        rows = (
            violations.values(column)
            .annotate(
                total=Count("id"),
                blocks=Count("id", filter=Q(action=Action.BLOCK)),
                warns=Count("id", filter=Q(action=Action.WARN)),
            )
            .order_by("-total", column)[:TOP_N]
        )
        return [{"name": r[column], "total": r["total"], "blocks": r["blocks"], "warns": r["warns"]} for r in rows]

    return OverviewStats(
        period=period,
        label=label,
        since=since,
        unit=unit,
        buckets=list(buckets.values()),
        top_policies=top("policy_name"),
        top_agents=top("agent_name"),
    )
