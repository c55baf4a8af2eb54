import math

from django.conf import settings
from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from core import vocabulary
from core.vocabulary import SEVERITY
from tenants.models import ApiKey, Tenant

# Django choices over the shared vocabulary (core.vocabulary), so models, filters and forms agree.
Action = models.TextChoices("Action", [(a.name, a.value) for a in vocabulary.Action])
Phase = models.TextChoices("Phase", [(p.name, p.value) for p in vocabulary.Phase])


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        BLOCKED = "blocked"
        FAILED = "failed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="runs")
    agent_name = models.CharField(max_length=200)
    workflow_name = models.CharField(max_length=200, blank=True, default="")
    input = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # The most severe action of any decision in the run, for the runs list.
    final_action = models.CharField(max_length=8, choices=Action.choices, default=Action.ALLOW)
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    output = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The run row stays the same size however many reports it gets: what after_workflow audits
    # (every citation and unsupported claim, the latest output_confidence) is read from the
    # reports when the run completes, and sources are stored once per run (RunSource).
    # report_count numbers the reports; output is the latest non-empty one reported.
    report_count = models.PositiveIntegerField(default=0)
    # Kept for the runs list's columns and sorts (governance/selectors/run_list.py) by the services that
    # write reports and evaluations, so a sorted page of 100,000 runs is an index scan, not an aggregate.
    # The lowest of the reports' scores, a report's score being its best grounding score (`report_score`).
    worst_score = models.FloatField(null=True, blank=True)
    # Estimated USD of every LLM call judges made for the run (`judge_cost_of`).
    judge_cost = models.FloatField(default=0.0)
    # ended_at - started_at, set with ended_at (save()).
    duration_ms = models.BigIntegerField(null=True, blank=True)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["tenant", "-id"]),
            models.Index(fields=["tenant", "agent_name", "-id"]),
            models.Index(fields=["tenant", "status", "-id"]),
            # The overview's runs per day by final action, read from the index alone (no heap visit);
            # it also serves every (tenant, started_at) range the plain index served.
            models.Index(fields=["tenant", "started_at", "final_action"], name="run_overview"),
            # The runs list's sorts: each a (tenant, column, id) range scan, read either way. None on
            # report_count: every report changes it, and an index on it would make every report's
            # update of the run write every index anew; that sort reads the tenant's runs (bench/
            # pages_at_volume.py measures it).
            models.Index(fields=["tenant", "final_action", "id"], name="run_sort_action"),
            models.Index(fields=["tenant", "worst_score", "id"], name="run_sort_score"),
            models.Index(fields=["tenant", "duration_ms", "id"], name="run_sort_duration"),
            models.Index(fields=["tenant", "judge_cost", "id"], name="run_sort_cost"),
            models.Index(fields=["tenant", "workflow_name", "id"], name="run_sort_workflow"),
            models.Index(fields=["tenant", "started_at", "id"], name="run_sort_started"),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.agent_name})"

    def save(self, *args, **kwargs):
        # Only where ended_at is written: a partial save of a run read in part reads nothing more.
        update_fields = kwargs.get("update_fields")
        if update_fields is None or "ended_at" in update_fields:
            self.duration_ms = run_duration_ms(self.started_at, self.ended_at)
            if update_fields is not None and "duration_ms" not in update_fields:
                kwargs["update_fields"] = [*update_fields, "duration_ms"]
        super().save(*args, **kwargs)

    def note_report(self, scores) -> list[str]:
        """Lowers worst_score to this report's score; returns the fields it changed."""
        score = report_score(scores)
        if score is None or (self.worst_score is not None and self.worst_score <= score):
            return []
        self.worst_score = score
        return ["worst_score"]

    def add_judge_cost(self, metadatas) -> list[str]:
        cost = judge_cost_of(metadatas)
        if not cost:
            return []
        self.judge_cost = (self.judge_cost or 0.0) + cost
        return ["judge_cost"]

    def raise_final_action(self, action: str) -> list[str]:
        """Keeps final_action the most severe action seen (a block also blocks a running run);
        returns the fields it changed."""
        fields = []
        if SEVERITY[action] > SEVERITY[self.final_action]:
            self.final_action = action
            fields.append("final_action")
        if action == "block" and self.status == Run.Status.RUNNING:
            self.status = Run.Status.BLOCKED
            fields.append("status")
        return fields


def run_duration_ms(started_at, ended_at) -> int | None:
    if not (started_at and ended_at):
        return None
    return max(0, int((ended_at - started_at).total_seconds() * 1000))


def report_score(scores) -> float | None:
    """A report's grounding score for the runs list: its best one (what the default `max` mode checks)."""
    return max(scores) if scores else None


def _usd(value) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else 0.0


# Where evaluations record an LLM call: an LLM judge's (judges/services.py) and a verifier's escalation.
LLM_CALL_KEYS = ("judge", "escalation")


def judge_cost_of(metadatas) -> float:
    """The estimated USD of the LLM calls recorded in evaluations' metadata (`judge.cost_usd`,
    `escalation.cost_usd`); an answer from the tenant's cache cost nothing this time."""
    total = 0.0
    for metadata in metadatas:
        if isinstance(metadata, dict):
            for key in LLM_CALL_KEYS:
                call = metadata.get(key)
                if isinstance(call, dict) and not call.get("cached"):
                    total += _usd(call.get("cost_usd"))
    return total


class RunSource(models.Model):
    """A source a run reported, stored once per run however many reports give it.

    Identified by the agent's source id and the SHA-256 of its text, so a source re-sent with the
    same text is one row and a source whose text changed is a second one (citations resolve
    against every text an id had). A report keeps references to these rows (GroundingReport.
    source_refs), so looking up what a report's citations name reads only those ids.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="source_rows")
    source_id = models.CharField(max_length=500)
    content_hash = models.CharField(max_length=64)
    text = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "source_id", "content_hash"], name="uniq_run_source")]

    def __str__(self) -> str:
        return f"Source {self.source_id} of run {self.run_id}"


class GroundingReport(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="reports")
    seq = models.PositiveIntegerField()
    grounding_scores = models.JSONField(default=list)
    citations = models.JSONField(default=list)
    unsupported_claims = models.JSONField(default=list)
    output_confidence = models.FloatField(null=True, blank=True)
    output = models.TextField(blank=True, default="")
    # The report's sources in the order given, each as reported but with its text replaced by
    # the key of its RunSource row: {"id", "sha256", "score"?, "span_id"?} (governance/rows.py).
    source_refs = models.JSONField(default=list)
    # The agent's score audit the engine read for this report ({"inflation", "samples"}), stored
    # when a policy asked for it (max_score_inflation): replay and calibration re-check it.
    score_inflation = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="uniq_report_seq")]

    @property
    def sources(self) -> list[dict]:
        """The sources as the agent reported them, texts joined from RunSource.

        Readers of many reports join them in one query first (`attach_sources`); a report read
        on its own joins its own on first use.
        """
        if getattr(self, "_sources", None) is None:
            attach_sources([self])
        return self._sources


def attach_sources(reports) -> list[GroundingReport]:
    """Give each report its `sources` (texts joined from RunSource) in one query per run."""
    reports = list(reports)
    for report, sources in zip(
        reports, joined_sources([(report.run_id, report.source_refs) for report in reports]), strict=True
    ):
        report._sources = sources
    return reports


def joined_sources(reports: list[tuple[int, list[dict]]]) -> list[list[dict]]:
    """For each report given as (run id, source_refs), its sources as reported, texts joined from
    RunSource in one query per run (read as model instances or as rows alike)."""
    wanted: dict[int, set[str]] = {}
    for run_id, refs in reports:
        wanted.setdefault(run_id, set()).update(ref[SOURCE_HASH] for ref in refs)
    texts: dict[tuple, str] = {}
    for run_id, hashes in wanted.items():
        if hashes:
            # The plain manager: the reports were read under the tenant's scope already.
            rows = RunSource._base_manager.filter(run_id=run_id, content_hash__in=hashes)
            texts.update(
                ((run_id, source_id, content_hash), text)
                for source_id, content_hash, text in rows.values_list("source_id", "content_hash", "text")
            )
    return [
        [source_from_ref(ref, texts.get((run_id, ref["id"], ref[SOURCE_HASH]), "")) for ref in refs]
        for run_id, refs in reports
    ]


# The key under which a report's source reference names its text (RunSource.content_hash).
SOURCE_HASH = "sha256"


def source_from_ref(ref: dict, text: str) -> dict:
    """A reported source again, from its reference and its text: {"id", "text", ...the rest}."""
    return {"id": ref["id"], "text": text, **{k: v for k, v in ref.items() if k not in ("id", SOURCE_HASH)}}


class Span(models.Model):
    class Kind(models.TextChoices):
        TOOL = "tool"
        LLM = "llm"
        RETRIEVAL = "retrieval"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="spans")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=200)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Nesting by the sender's own ids, as OpenTelemetry does: a child usually ends, and so is sent,
    # before its parent, and spans are partitioned on PostgreSQL (no foreign key to them), so the
    # parent is named by its span_id within the run and may arrive later (docs/tracing.md).
    span_id = models.CharField(max_length=64, blank=True, default="")
    parent_span_id = models.CharField(max_length=64, null=True, blank=True)  # null: a root span

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["run", "id"]
        indexes = [
            # The API's check that a named parent is not another run's span.
            models.Index(fields=["tenant", "span_id"], name="span_tenant_span_id", condition=~models.Q(span_id="")),
        ]

    @property
    def duration_ms(self) -> int | None:
        if not (self.started_at and self.ended_at):
            return None
        return int((self.ended_at - self.started_at).total_seconds() * 1000)


class Decision(models.Model):
    """The answer given to one phase call: the combined action over every evaluation."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="decisions")
    # No foreign key in the database: reports are partitioned on PostgreSQL (core/partitions.py),
    # and a partitioned table can be referenced only by its whole key (id, created_at). The ORM
    # still cascades deletes.
    report = models.ForeignKey(
        GroundingReport,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="decisions",
        db_constraint=False,
    )
    phase = models.CharField(max_length=20, choices=Phase.choices)
    action = models.CharField(max_length=8, choices=Action.choices)
    reason = models.TextField(blank=True, default="")
    abstention_response = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["run", "id"]


class ReviewState(models.TextChoices):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    DISMISSED = "dismissed"


class Evaluation(models.Model):
    """One policy's verdict at one phase; a warn or block is a violation reviewers judge."""

    Source = models.TextChoices("Source", [(s.name, s.value) for s in vocabulary.EvaluationSource])

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evaluations")
    decision = models.ForeignKey(Decision, null=True, blank=True, on_delete=models.CASCADE, related_name="evaluations")
    # Denormalised so an evaluation keeps saying what it said after its policy is edited or deleted.
    policy = models.ForeignKey(
        "policies.Policy", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations"
    )
    policy_ref = models.BigIntegerField(null=True, blank=True)
    policy_name = models.CharField(max_length=200)
    policy_version = models.PositiveIntegerField(default=1)
    category = models.CharField(max_length=64)
    agent_name = models.CharField(max_length=200)
    phase = models.CharField(max_length=20, choices=Phase.choices)
    action = models.CharField(max_length=8, choices=Action.choices)
    reason = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.ENGINE)
    # Said by a policy in shadow mode: shown, never part of the decision or the enforced counts.
    shadow = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    review_state = models.CharField(max_length=16, choices=ReviewState.choices, default=ReviewState.PENDING)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_comment = models.TextField(blank=True, default="")

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["tenant", "-id"]),
            models.Index(fields=["tenant", "action", "-id"]),
            models.Index(fields=["tenant", "agent_name", "-id"]),
            models.Index(fields=["tenant", "agent_name", "action", "-id"]),
            models.Index(fields=["tenant", "policy_ref", "-id"]),
            models.Index(fields=["tenant", "review_state", "-id"]),
            models.Index(fields=["tenant", "created_at"]),
            # The overview's violations per day and its most violated policies and agents, read from
            # the index alone; only the enforced violations are in it, a third of the rows or fewer.
            models.Index(
                fields=["tenant", "created_at", "action", "policy_name", "agent_name"],
                name="evaluation_overview",
                condition=models.Q(action__in=["warn", "block"], shadow=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.policy_name} at {self.phase} (run {self.run_id})"

    @property
    def is_violation(self) -> bool:
        return self.action in (Action.WARN, Action.BLOCK)


class ReplayJob(models.Model):
    """A replay too large to answer inline (governance/replay.py), run by Celery with its progress."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    # The validated request: window, agents, and the before/after policy specs as dicts.
    params = models.JSONField()
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]


class ScoreAudit(models.Model):
    """The local verifier's measure of one sampled grounding report, beside what the agent reported.

    `reported` is the mean of the report's grounding scores, `measured` the mean support probability
    of the output's claims against all of its sources; `per_source` pairs each reported score with the
    measure against the source in the same position. See docs/score-audit.md.
    """

    class Status(models.TextChoices):
        AUDITED = "audited"
        NOT_AUDITABLE = "not_auditable"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="score_audits")
    # One audit per report: the task that writes it may be retried or delivered twice.
    # db_constraint=False: reports are partitioned on PostgreSQL (see Decision.report).
    report = models.OneToOneField(
        GroundingReport, on_delete=models.CASCADE, related_name="score_audit", db_constraint=False
    )
    agent_name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices)
    reported = models.FloatField(null=True, blank=True)
    measured = models.FloatField(null=True, blank=True)
    per_source = models.JSONField(default=list, blank=True)
    claims = models.JSONField(default=list, blank=True)
    # Who measured it ("local" verifier or "llm" judge), with which model, and what the call cost.
    auditor = models.CharField(max_length=8, default="local")
    auditor_model = models.CharField(max_length=200, blank=True, default="")
    cost_usd = models.FloatField(null=True, blank=True)
    note = models.CharField(max_length=200, blank=True, default="")  # why a report was not auditable
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "agent_name", "-id"])]


class AgentScoreAuditDay(models.Model):
    """Running sums of one agent's score audits on one day (UTC), kept by the audit task.

    Inflation over a window and the Pearson correlation of reported with measured come from these
    sums, so the mid_execution check and the score-audit pages read a handful of rows, never a scan.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    agent_name = models.CharField(max_length=200)
    date = models.DateField()
    # One row per auditor: the local verifier's and the LLM judge's measures never share a sum.
    auditor = models.CharField(max_length=8, default="local")
    audited = models.PositiveIntegerField(default=0)
    not_auditable = models.PositiveIntegerField(default=0)
    sum_reported = models.FloatField(default=0.0)
    sum_measured = models.FloatField(default=0.0)
    sum_reported_sq = models.FloatField(default=0.0)
    sum_measured_sq = models.FloatField(default=0.0)
    sum_products = models.FloatField(default=0.0)
    cost_usd = models.FloatField(default=0.0)  # what the LLM auditor's calls cost that day

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["agent_name", "date"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "agent_name", "date", "auditor"], name="uniq_agent_score_audit_day_auditor"
            )
        ]
