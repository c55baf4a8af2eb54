"""The score audit: re-scoring a sample of grounding reports with the local verifier (docs/score-audit.md).

Agents report their own grounding scores; every mid_execution decision rests on them. A sampled report
that carries output and sources is measured off the request path (a Celery task queued on commit) and
stored beside what the agent reported; per-agent, per-day sums make inflation (reported − measured)
readable in a few rows, by the pages, the API and the `max_score_inflation` rule on the hot path.
"""

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone
from django_scopes import scope, scopes_disabled

from core import metrics
from judges.audit_llm import llm_measure
from judges.support import measure_support
from policies.scope import applicable_policies
from policies.selectors import policy_specs_for
from tenants.models import Tenant
from webhooks.events import SCORE_AUDIT_ALERT
from webhooks.services import webhook_emit

from .models import AgentScoreAuditDay, GroundingReport, Run, ScoreAudit

INFLATION_WINDOW_DAYS = 7
# Under this many audited reports a mean is "too few to judge": no correlation, no "needs attention",
# and a day's dot is drawn hollow (docs/score-audit.md, "Reading it").
MIN_SAMPLES = 10
MIN_CORRELATION_SAMPLES = MIN_SAMPLES
# An agent needs attention when the 95% interval of its mean gap (reported − measured) lies wholly
# above this: the verifier under-reads paraphrase, so an honest agent shows some gap (docs/score-audit.md).
ATTENTION_GAP = 0.2
Z95 = 1.96
LOCAL = "local"
LLM_AUDITOR = "llm"
AUDITORS = (LOCAL, LLM_AUDITOR)


def auditor_for(tenant: Tenant, specs) -> tuple[str, str]:
    """(auditor, model) measuring this agent's reports: the first governing grounding policy whose
    ``score_audit_auditor`` names one (an LLM auditor uses that policy's ``llm_grounding_model``),
    else the tenant's setting. The decision path reads the same auditor's figures."""
    for spec in specs:
        chosen = spec.rules.get("score_audit_auditor") if spec.category == "grounding" else None
        if chosen == LLM_AUDITOR:
            return LLM_AUDITOR, spec.rules.get("llm_grounding_model") or tenant.score_audit_model
        if chosen == LOCAL:
            return LOCAL, ""
    if tenant.score_audit_auditor == LLM_AUDITOR:
        return LLM_AUDITOR, tenant.score_audit_model
    return LOCAL, ""


def _auditable_sources(sources) -> list[dict]:
    return [
        {"id": str(s.get("id") or f"source-{i}"), "text": s["text"]}
        for i, s in enumerate(sources)
        if isinstance(s, dict) and isinstance(s.get("text"), str) and s["text"].strip()
    ]


def report_audit(*, report_id: int) -> str:
    """Measures one report and stores the audit beside it. Idempotent: a second delivery writes nothing."""
    with scopes_disabled():
        report = GroundingReport.objects.select_related("run", "tenant").filter(pk=report_id).first()
    if report is None:
        return "missing"
    with scope(tenant=report.tenant):
        if ScoreAudit.objects.filter(report=report).exists():
            return "duplicate"
        audit = _measure(report)
        day = audit.created_at.date()
        before = agent_inflation(tenant_id=report.tenant_id, agent_name=audit.agent_name, auditor=audit.auditor)
        try:
            with transaction.atomic():
                audit.save()
                _add_to_day(audit, day)
                _alert_on_crossing(report, before, audit.auditor)
        except IntegrityError:  # a concurrent delivery of the same task stored it first
            return "duplicate"
        forget_agent_inflation(tenant_id=report.tenant_id, agent_name=audit.agent_name)
    return audit.status


def _alert_on_crossing(report: GroundingReport, before: tuple[float | None, int], auditor: str) -> None:
    """The `score_audit.alert` webhook, once, when this audit takes the agent past a policy's limit."""
    agent = report.run.agent_name
    limits = [
        spec
        for spec in applicable_policies(policy_specs_for(report.tenant), agent)
        if spec.rules.get("max_score_inflation") is not None
    ]
    if not limits:
        return
    after = agent_inflation(tenant_id=report.tenant_id, agent_name=agent, auditor=auditor)

    def over(figures: tuple[float | None, int], spec) -> bool:
        inflation, samples = figures
        return (
            inflation is not None
            and samples >= spec.rules["score_audit_min_samples"]
            and round(inflation, 2) > spec.rules["max_score_inflation"]
        )

    crossed = [spec for spec in limits if over(after, spec) and not over(before, spec)]
    if crossed:
        webhook_emit(
            tenant=report.tenant,
            event=SCORE_AUDIT_ALERT,
            data={
                "agent_name": agent,
                "auditor": auditor,
                "inflation": round(after[0], 4),
                "samples": after[1],
                "policies": [
                    {"id": s.id, "name": s.name, "max_score_inflation": s.rules["max_score_inflation"]} for s in crossed
                ],
            },
        )


def _measure(report: GroundingReport) -> ScoreAudit:
    audit = ScoreAudit(
        tenant=report.tenant,
        run=report.run,
        report=report,
        agent_name=report.run.agent_name,
        created_at=report.created_at,
    )
    sources = _auditable_sources(report.sources)
    scores = [float(s) for s in report.grounding_scores]
    specs = applicable_policies(policy_specs_for(report.tenant), report.run.agent_name)
    audit.auditor, audit.auditor_model = auditor_for(report.tenant, specs)
    if audit.auditor == LLM_AUDITOR:
        return _measure_by_llm(audit, report, sources, scores)
    measure = None
    if report.output.strip() and sources and scores:
        measure = measure_support(
            report.output, sources, tenant=report.tenant, escalation_rules=_escalation_rules(report)
        )
        if measure.escalation and measure.escalation.get("status") != "nothing_to_escalate":
            metrics.observe_provider_call(measure.escalation, report.tenant)
    if measure is None or measure.overall is None:
        # No output, no source text, no reported score, or no factual claim: nothing to compare, never guessed.
        audit.status = ScoreAudit.Status.NOT_AUDITABLE
        return audit
    audit.status = ScoreAudit.Status.AUDITED
    audit.reported = round(sum(scores) / len(scores), 4)
    audit.measured = measure.overall
    audit.per_source = [
        {"source_id": source["id"], "reported": reported, "measured": measured}
        for source, reported, measured in zip(sources, scores, measure.per_source)
    ]
    audit.claims = list(measure.claims)
    return audit


def _measure_by_llm(audit: ScoreAudit, report: GroundingReport, sources: list[dict], scores: list[float]) -> ScoreAudit:
    """The tenant's LLM judge scores the whole output against the sources: one overall measure (no
    per-claim or per-source split), its cost kept on the audit."""
    if not (report.output.strip() and sources and scores):
        audit.status = ScoreAudit.Status.NOT_AUDITABLE
        return audit
    measured = llm_measure(tenant=report.tenant, output=report.output, sources=sources, model=audit.auditor_model)
    if measured.call.get("provider") and measured.call.get("status") != "no_api_key":
        metrics.observe_provider_call(measured.call, report.tenant)
    cost = measured.call.get("cost_usd")
    audit.cost_usd = round(float(cost), 8) if isinstance(cost, int | float) else None
    if measured.score is None:
        audit.status = ScoreAudit.Status.NOT_AUDITABLE
        audit.note = f"LLM auditor: {measured.reason}"[:200]
        return audit
    audit.status = ScoreAudit.Status.AUDITED
    audit.reported = round(sum(scores) / len(scores), 4)
    audit.measured = measured.score
    audit.per_source = [
        {"source_id": source["id"], "reported": reported, "measured": None} for source, reported in zip(sources, scores)
    ]
    return audit


def _escalation_rules(report: GroundingReport) -> dict | None:
    """The rules of the first grounding policy governing the report that escalates undecided claims.

    The measure then uses the same LLM as that policy's verifier would (docs/score-audit.md).
    """
    for spec in applicable_policies(policy_specs_for(report.tenant), report.run.agent_name):
        if spec.category == "grounding" and spec.rules.get("nli_escalation") == "llm":
            return spec.rules
    return None


def _add_to_day(audit: ScoreAudit, day: date) -> None:
    row, _ = AgentScoreAuditDay.objects.select_for_update().get_or_create(
        tenant=audit.tenant, agent_name=audit.agent_name, date=day, auditor=audit.auditor
    )
    if audit.cost_usd:
        row.cost_usd = F("cost_usd") + audit.cost_usd
    if audit.status == ScoreAudit.Status.NOT_AUDITABLE:
        row.not_auditable = F("not_auditable") + 1
    else:
        x, y = audit.reported, audit.measured
        row.audited = F("audited") + 1
        row.sum_reported = F("sum_reported") + x
        row.sum_measured = F("sum_measured") + y
        row.sum_reported_sq = F("sum_reported_sq") + x * x
        row.sum_measured_sq = F("sum_measured_sq") + y * y
        row.sum_products = F("sum_products") + x * y
    row.save()


def days_rebuild(*, tenant: Tenant) -> None:
    """The tenant's daily sums again from its audits, each on the day of its created_at: for audits
    moved in time after they were stored (the demo dates each on its run's day)."""
    with transaction.atomic():
        AgentScoreAuditDay.objects.filter(tenant=tenant).delete()
        for audit in ScoreAudit.objects.filter(tenant=tenant).order_by("id"):
            _add_to_day(audit, audit.created_at.date())
    forget_agent_inflation()


# --------------------------------------------------------------------------- reads


@dataclass(frozen=True)
class Totals:
    audited: int = 0
    not_auditable: int = 0
    sum_reported: float = 0.0
    sum_measured: float = 0.0
    sum_reported_sq: float = 0.0
    sum_measured_sq: float = 0.0
    sum_products: float = 0.0
    cost_usd: float = 0.0

    @property
    def reported_mean(self) -> float | None:
        return round(self.sum_reported / self.audited, 4) if self.audited else None

    @property
    def measured_mean(self) -> float | None:
        return round(self.sum_measured / self.audited, 4) if self.audited else None

    @property
    def inflation(self) -> float | None:
        return round((self.sum_reported - self.sum_measured) / self.audited, 4) if self.audited else None

    @property
    def inflation_interval(self) -> tuple[float, float] | None:
        """The 95% interval of the mean gap (normal approximation, the gaps' sample variance from the
        sums); None under two samples, where no spread can be estimated."""
        n = self.audited
        if n < 2:
            return None
        sum_gap = self.sum_reported - self.sum_measured
        sum_gap_sq = self.sum_reported_sq - 2 * self.sum_products + self.sum_measured_sq
        variance = max(0.0, (sum_gap_sq - sum_gap * sum_gap / n) / (n - 1))
        mean, margin = sum_gap / n, Z95 * math.sqrt(variance / n)
        # A gap lies between -1 and 1 (both scores are 0 to 1); the normal approximation of a few
        # samples can reach past that, which no reader should be shown.
        return round(max(-1.0, mean - margin), 4), round(min(1.0, mean + margin), 4)

    @property
    def few_samples(self) -> bool:
        return self.audited < MIN_SAMPLES

    @property
    def needs_attention(self) -> bool:
        interval = self.inflation_interval
        return not self.few_samples and interval is not None and interval[0] > ATTENTION_GAP

    @property
    def correlation(self) -> float | None:
        """Pearson's r of reported with measured; None under 10 samples or with no variance."""
        n = self.audited
        if n < MIN_CORRELATION_SAMPLES:
            return None
        sx, sy = self.sum_reported, self.sum_measured
        vx = n * self.sum_reported_sq - sx * sx
        vy = n * self.sum_measured_sq - sy * sy
        if vx <= 1e-12 or vy <= 1e-12:
            return None
        return round((n * self.sum_products - sx * sy) / math.sqrt(vx * vy), 4)


_SUMS = (
    "audited",
    "not_auditable",
    "sum_reported",
    "sum_measured",
    "sum_reported_sq",
    "sum_measured_sq",
    "sum_products",
    "cost_usd",
)


def _totals(rows) -> Totals:
    sums = rows.aggregate(**{name: Sum(name) for name in _SUMS})
    return Totals(**{name: sums[name] or 0 for name in _SUMS})


def inflation_needed(specs) -> bool:
    return any(spec.rules.get("max_score_inflation") is not None for spec in specs)


def agent_inflation(
    *, tenant_id: int, agent_name: str, auditor: str = LOCAL, today: date | None = None
) -> tuple[float | None, int]:
    """(mean inflation, audited reports) of the agent over the last 7 days, as ``auditor`` measured it:
    the rule's input. At most seven rows by an index; read only when an applicable policy sets
    max_score_inflation.
    """
    today = today or timezone.now().date()
    rows = AgentScoreAuditDay.objects.filter(
        tenant_id=tenant_id,
        agent_name=agent_name,
        auditor=auditor,
        date__gt=today - timedelta(days=INFLATION_WINDOW_DAYS),
    )
    totals = _totals(rows)
    return totals.inflation, totals.audited


# The decision path's copy of agent_inflation, per process: the figure is a 7-day average that one
# audit moves by a fraction, so reading it at most every SCORE_AUDIT_INFLATION_CACHE_SECONDS spares
# the report path an aggregate query per report (bench/report.py measured a quarter of its
# throughput). An audit forgets the agent's entry in its own process; elsewhere it ages out.
_inflation_cache: dict[tuple[int, str, date, str], tuple[float, tuple[float | None, int]]] = {}
_inflation_lock = threading.Lock()
_INFLATION_CACHE_SIZE = 10_000


def agent_inflation_for_decision(*, tenant_id: int, agent_name: str, auditor: str = LOCAL) -> tuple[float | None, int]:
    """agent_inflation, reused for up to SCORE_AUDIT_INFLATION_CACHE_SECONDS in this process."""
    ttl = settings.SCORE_AUDIT_INFLATION_CACHE_SECONDS
    if ttl <= 0:
        return agent_inflation(tenant_id=tenant_id, agent_name=agent_name, auditor=auditor)
    key = (tenant_id, agent_name, timezone.now().date(), auditor)
    now = time.monotonic()
    hit = _inflation_cache.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    figures = agent_inflation(tenant_id=tenant_id, agent_name=agent_name, auditor=auditor)
    with _inflation_lock:
        if len(_inflation_cache) >= _INFLATION_CACHE_SIZE:
            _inflation_cache.clear()
        _inflation_cache[key] = (now + ttl, figures)
    return figures


def forget_agent_inflation(*, tenant_id: int | None = None, agent_name: str | None = None) -> None:
    """Drop cached inflation figures: one agent's, or (no arguments) all of them (tests)."""
    with _inflation_lock:
        if tenant_id is None:
            _inflation_cache.clear()
            return
        for key in [k for k in _inflation_cache if k[0] == tenant_id and k[1] == agent_name]:
            _inflation_cache.pop(key, None)


def _window(qs, since: date | None, until: date | None):
    if since is not None:
        qs = qs.filter(date__gte=since)
    if until is not None:
        qs = qs.filter(date__lte=until)
    return qs


def _figures(agent_name: str, totals: Totals, auditor: str) -> dict:
    interval = totals.inflation_interval
    return {
        "agent_name": agent_name,
        "auditor": auditor,
        "cost_usd": round(totals.cost_usd, 6),
        "audited_reports": totals.audited,
        "not_auditable": totals.not_auditable,
        "reported_mean": totals.reported_mean,
        "measured_mean": totals.measured_mean,
        "inflation": totals.inflation,
        "inflation_low": interval[0] if interval else None,
        "inflation_high": interval[1] if interval else None,
        "few_samples": totals.few_samples,
        "needs_attention": totals.needs_attention,
        "correlation": totals.correlation,
    }


def day_margin(audited: int) -> float | None:
    """Half the width of a day's band: the 95% interval a mean of ``audited`` scores between 0 and 1
    needs at the widest (standard deviation 0.5), so it depends on the count alone and is never falsely
    narrow for a day of two alike samples."""
    return round(min(1.0, Z95 * 0.5 / math.sqrt(audited)), 4) if audited else None


def _day_figures(row: AgentScoreAuditDay) -> dict:
    n = row.audited
    return {
        "date": row.date.isoformat(),
        "audited": n,
        "reported_mean": round(row.sum_reported / n, 4) if n else None,
        "measured_mean": round(row.sum_measured / n, 4) if n else None,
        "inflation": round((row.sum_reported - row.sum_measured) / n, 4) if n else None,
        "margin": day_margin(n),
        "few_samples": n < MIN_SAMPLES,
    }


def agent_days(
    *, tenant: Tenant, agent_name: str, auditor: str = LOCAL, since: date | None = None, until: date | None = None
) -> list[dict]:
    """One agent's figures per day (UTC) as one auditor measured them: a row per day with any audit,
    one query over at most one row a day."""
    rows = _window(
        AgentScoreAuditDay.objects.filter(tenant=tenant, agent_name=agent_name, auditor=auditor), since, until
    )
    return [_day_figures(row) for row in rows.order_by("date")]


def every_day(days: list[dict], since: date, until: date) -> list[dict]:
    """``days`` with each missing day of since..until in place, its figures None: a gap, not a zero."""
    by_date = {d["date"]: d for d in days}
    count = (until - since).days + 1
    dates = [(since + timedelta(days=i)).isoformat() for i in range(count)]
    empty = {"audited": 0, "reported_mean": None, "measured_mean": None, "inflation": None, "margin": None}
    return [by_date.get(d) or {"date": d, **empty, "few_samples": True} for d in dates]


def agent_known(*, tenant: Tenant, agent_name: str) -> bool:
    """Whether the tenant has this agent: by its runs or, once retention removed those, its daily sums."""
    return (
        Run.objects.filter(tenant=tenant, agent_name=agent_name).exists()
        or AgentScoreAuditDay.objects.filter(tenant=tenant, agent_name=agent_name).exists()
    )


def agent_summary(
    *, tenant: Tenant, agent_name: str, auditor: str = LOCAL, since: date | None = None, until: date | None = None
) -> dict:
    """One agent's figures as one auditor measured them (the two auditors' are never summed)."""
    rows = _window(
        AgentScoreAuditDay.objects.filter(tenant=tenant, agent_name=agent_name, auditor=auditor), since, until
    )
    by_day = agent_days(tenant=tenant, agent_name=agent_name, auditor=auditor, since=since, until=until)
    return {**_figures(agent_name, _totals(rows), auditor), "by_day": by_day}


def agents_summary(*, tenant: Tenant, since: date | None = None, until: date | None = None) -> list[dict]:
    """Every audited agent with its figures, one row per auditor that measured it, in one grouped
    query: those needing attention first, then by inflation, largest first (agents with no audit last)."""
    rows = _window(AgentScoreAuditDay.objects.filter(tenant=tenant), since, until)
    grouped = (
        rows.values("agent_name", "auditor")
        .annotate(**{name: Sum(name) for name in _SUMS})
        .order_by("agent_name", "auditor")
    )
    agents = [
        _figures(g["agent_name"], Totals(**{name: g[name] or 0 for name in _SUMS}), g["auditor"]) for g in grouped
    ]
    return sorted(
        agents,
        key=lambda a: (
            not a["needs_attention"],
            a["inflation"] is None,
            -(a["inflation"] or 0.0),
            a["agent_name"],
            a["auditor"],
        ),
    )


def measured_by_report(report_ids: Sequence[int]) -> dict[int, ScoreAudit]:
    """The audits of these reports, for the Trace tab's measured-beside-reported bars."""
    return {a.report_id: a for a in ScoreAudit.objects.filter(report_id__in=list(report_ids))}
