"""Overview: runs by final action and violating evaluations per hour or day, and the most violated
policies and agents.

Two charts, each counting one thing: a run once, by its final action (the most severe action of its
decisions, kept on the run); an evaluation that warned or blocked once, by its action. A run with
three blocking evaluations is one blocked run and three blocks.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db.models import Count
from django.db.models.functions import Trunc
from django.utils import timezone

from core.vocabulary import Action

from ..models import Run
from .overview_days import as_utc, violations_by_bucket

PERIODS = {
    "24h": (timedelta(hours=24), "hour", "Last 24 hours"),
    "7d": (timedelta(days=7), "day", "Last 7 days"),
    "30d": (timedelta(days=30), "day", "Last 30 days"),
}
DEFAULT_PERIOD = "24h"
TOP_N = 5

# The stacks, bottom to top, with what the page calls them.
RUN_SERIES = ((Action.ALLOW, "Allowed runs"), (Action.WARN, "Warned runs"), (Action.BLOCK, "Blocked runs"))
EVALUATION_SERIES = ((Action.WARN, "Warning evaluations"), (Action.BLOCK, "Blocking evaluations"))


def _zeros(series) -> dict[str, int]:
    return {action.value: 0 for action, _ in series}


@dataclass
class Bucket:
    starts: datetime
    runs: dict[str, int] = field(default_factory=lambda: _zeros(RUN_SERIES))  # by final action
    evaluations: dict[str, int] = field(default_factory=lambda: _zeros(EVALUATION_SERIES))  # by action

    @property
    def run_total(self) -> int:
        return sum(self.runs.values())


@dataclass
class OverviewStats:
    period: str
    label: str
    since: datetime
    unit: str
    buckets: list[Bucket]
    top_policies: list[dict]
    top_agents: list[dict]
    # Whether the tenant has any run at all, in any period: an empty tenant is shown how to connect one.
    has_runs: bool = True

    def _sum(self, counts: str, action: str) -> int:
        return sum(getattr(b, counts)[action] for b in self.buckets)

    @property
    def runs(self) -> int:
        return sum(b.run_total for b in self.buckets)

    @property
    def runs_by_action(self) -> dict[str, int]:
        return {action.value: self._sum("runs", action) for action, _ in RUN_SERIES}

    @property
    def warns(self) -> int:
        return self._sum("evaluations", Action.WARN)

    @property
    def blocks(self) -> int:
        return self._sum("evaluations", Action.BLOCK)

    @property
    def violations(self) -> int:
        return self.warns + self.blocks

    def chart_data(self) -> dict:
        """What overview.js draws: per chart, one series of bar heights per action."""
        fmt = "%H:%M" if self.unit == "hour" else "%b %d"
        labels = [b.starts.strftime(fmt) for b in self.buckets]

        def chart(counts: str, series) -> dict:
            return {
                "labels": labels,
                "series": [
                    {"action": action.value, "label": label, "data": [getattr(b, counts)[action] for b in self.buckets]}
                    for action, label in series
                ],
            }

        return {"runs": chart("runs", RUN_SERIES), "evaluations": chart("evaluations", EVALUATION_SERIES)}


def _floor(moment: datetime, unit: str) -> datetime:
    moment = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if unit == "day" else moment


def overview_stats(*, tenant, period: str, now: datetime | None = None) -> OverviewStats:
    """Runs per hour or day by final action, violating evaluations by action, the most violated
    policies and agents, and whether the tenant has any run. Four queries, whatever the volume.

    Each count is an aggregate over an index holding every column it reads (Run's `run_overview`,
    Evaluation's `evaluation_overview`), so PostgreSQL answers from the index alone; whole past days'
    violations come from the cache (overview_days.py). Warns and blocks
    count evaluations, as the violations list does, so each number links to a list of that many rows.
    """
    if period not in PERIODS:
        period = DEFAULT_PERIOD
    span, unit, label = PERIODS[period]
    now = now or timezone.now()
    # Whole minutes, so the `since` in the links to the lists reproduces the same set.
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
        .values("bucket", "final_action")
        .annotate(n=Count("final_action"))
        .order_by()
    )
    for row in runs:
        bucket = buckets.get(as_utc(row["bucket"]))
        if bucket and row["final_action"] in bucket.runs:
            bucket.runs[row["final_action"]] += row["n"]

    violations = violations_by_bucket(tenant=tenant, since=since, now=now, unit=unit)
    for starts, by_action in violations.per_bucket.items():
        bucket = buckets.get(starts)
        if bucket:
            for action in bucket.evaluations:
                bucket.evaluations[action] += by_action[action]

    def top(column: str) -> list[dict]:
        # Most violations first, then by name (code point order).
        ranked = sorted(violations.by_name[column].items(), key=lambda item: (-item[1].total(), item[0]))
        return [
            {"name": name, "total": n.total(), "blocks": n[Action.BLOCK], "warns": n[Action.WARN]}
            for name, n in ranked[:TOP_N]
        ]

    stats = OverviewStats(
        period=period,
        label=label,
        since=since,
        unit=unit,
        buckets=list(buckets.values()),
        top_policies=top("policy_name"),
        top_agents=top("agent_name"),
    )
    stats.has_runs = Run.objects.filter(tenant=tenant).exists()
    return stats
