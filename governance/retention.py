"""Retention (issue 15 item 3): run data and audit rows older than each tenant's setting go.

A tenant's `retention_days` covers its runs and everything stored under a run: grounding reports,
spans, decisions, evaluations, run sources, score audits, OTLP trace links (every model with a
foreign key to Run, found through Run's relations, so this module imports no app above it).
`audit_retention_days` covers its audit log. Null keeps everything; that is the default.

**When a run expires.** With cutoff C = now − retention_days, a run goes when it is not active:

* it ended (completed, blocked or failed) before C; or
* it never ended, started before C, and nothing has been written to it since C (no report, span,
  decision or evaluation created at or after C): an abandoned run, idle for the whole period.

An open run that still receives reports stays, however old. Everything under an expired run goes
with it, whatever its own timestamp; nothing under a kept run goes.

**One pass** (`retention_apply`: the `apply_retention` command and the daily Celery beat task):

1. the plan: each tenant's cutoffs, and per table the cutoff every tenant allows
   (`shared_cutoffs`);
2. audit checkpoints for every tenant with an audit retention, before any audit row goes;
3. `drop_partitions(plan)`: on PostgreSQL, whole monthly partitions of the history tables
   (core/partitions.py) older than the shared cutoff are dropped; skipped for a one-tenant pass;
4. per tenant, the rest in bounded batches: expired runs 1,000 at a time, each child table
   deleted 1,000 rows per statement (children before the rows they point to), then the runs,
   each statement its own short transaction; then the audit rows the checkpoint covers;
5. per tenant, one audit event `governance.retention.applied` with what was removed.

**The hot path is never locked**: a batch deletes rows of expired runs only (nothing the report
path writes to, short of a report on a run idle for the whole retention period, which then fails),
holds its locks for one statement, and a run whose final DELETE meets a row written meanwhile is
left for the next pass.
"""

from __future__ import annotations

import graphlib
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, connections, models, router, transaction
from django.db.models import Exists, Max, Min, OuterRef, Q
from django.utils import timezone
from django_scopes import scope, scopes_disabled

from core.deletion import BATCH, delete_by_ids
from core.partitions import drop_partition, partitioned_tables, partitions_older_than
from tenants.audit import Actor, AuditPrune, audit_checkpoint_record, audit_log_prune, audit_record
from tenants.models import AuditCheckpoint, AuditEvent, Tenant

from .models import Decision, Evaluation, GroundingReport, Run, Span

log = logging.getLogger(__name__)

ACTION = "governance.retention.applied"
ACTOR = Actor.system("retention")
RUNS = "governance.run"
AUDIT = AuditEvent._meta.label_lower


def run_children() -> list[tuple[type[models.Model], str]]:
    """(model, name of its foreign key to Run) for every model stored under a run, ordered so a model
    comes before every model it points to (evaluations before decisions before reports)."""
    children: dict[type[models.Model], str] = {}
    # include_hidden: most of them say related_name="+", which hides them from related_objects.
    relations = [
        f for f in Run._meta.get_fields(include_hidden=True) if f.auto_created and not f.concrete and f.is_relation
    ]
    for relation in relations:
        if relation.on_delete is not models.CASCADE:
            raise TypeError(f"{relation.related_model._meta.label} must cascade from Run to be retained with it")
        children[relation.related_model] = relation.field.name
    # A model must go before the models it points to: those are its successors in the order.
    pointed_at_by = {model: set() for model in children}
    for model in children:
        for f in model._meta.concrete_fields:
            if f.is_relation and f.related_model in children and f.related_model is not model:
                pointed_at_by[f.related_model].add(model)
    order = graphlib.TopologicalSorter(pointed_at_by).static_order()
    return [(model, children[model]) for model in order]


def _label(model) -> str:
    return model._meta.label_lower


@dataclass(frozen=True)
class TenantPlan:
    tenant: Tenant
    runs_before: datetime | None  # run data older than this may go; None keeps it all
    audit_before: datetime | None


def tenant_plan(tenant: Tenant, *, now: datetime) -> TenantPlan:
    def cutoff(days):
        return now - timedelta(days=days) if days is not None else None

    return TenantPlan(tenant, cutoff(tenant.retention_days), cutoff(tenant.audit_retention_days))


def expired_runs(*, tenant: Tenant, before: datetime) -> models.QuerySet:
    """The tenant's runs that retention removes at cutoff `before` (see the module's docstring)."""
    written_since = [
        Exists(model._base_manager.filter(run=OuterRef("pk"), created_at__gte=before))
        for model in (GroundingReport, Span, Decision, Evaluation)
    ]
    idle = ~written_since[0] & ~written_since[1] & ~written_since[2] & ~written_since[3]
    # Every expired run started before the cutoff: the (tenant, started_at) index bounds the scan.
    return Run._base_manager.filter(tenant=tenant, started_at__lt=before).filter(
        Q(ended_at__lt=before) | (Q(ended_at__isnull=True) & idle)
    )


def _oldest_kept_start(tenant: Tenant, before: datetime) -> datetime | None:
    # Runs that started before the cutoff and may be kept: every row under a run is created after
    # the run started, so no row older than the earliest of these is needed. Open runs count as
    # kept here even when idle (cheap; the batched deletes of the same pass remove an abandoned one,
    # so it holds partitions back by a day at most).
    return (
        Run._base_manager.filter(tenant=tenant, started_at__lt=before)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gte=before))
        .aggregate(oldest=Min("started_at"))["oldest"]
    )


def shared_cutoffs(plans: list[TenantPlan]) -> dict[str, datetime | None]:
    """Per table (model label), the time before which no tenant needs any of its rows: a partition
    holding only older rows can be dropped whole. None where some tenant keeps those rows forever.

    Run data: the earliest, over tenants, of each tenant's cutoff and of the start of its oldest run
    that is kept though it began before that cutoff (its rows must stay). The runs table itself is
    included for completeness. The audit log: the earliest tenant's audit cutoff; every tenant's
    checkpoint must be recorded (step 2 of a pass) before a partition of it is dropped.
    """
    run_cutoff: datetime | None = None
    audit_cutoff: datetime | None = None
    if plans and all(p.runs_before is not None for p in plans):
        bounds = []
        for p in plans:
            oldest_kept = _oldest_kept_start(p.tenant, p.runs_before)
            bounds.append(min(p.runs_before, oldest_kept) if oldest_kept else p.runs_before)
        run_cutoff = min(bounds)
    if plans and all(p.audit_before is not None for p in plans):
        audit_cutoff = min(p.audit_before for p in plans)
    cutoffs = {RUNS: run_cutoff}
    cutoffs.update({_label(model): run_cutoff for model, _ in run_children()})
    cutoffs[AUDIT] = audit_cutoff
    return cutoffs


def drop_partitions(*, cutoffs: dict[str, datetime | None], dry_run: bool) -> dict[int, Counter]:
    """Drop every monthly partition (core/partitions.py) of a table wholly older than
    `cutoffs[label]` (a table whose cutoff is None keeps all), and return the rows it removed per
    tenant id and table label, e.g. {7: Counter({"governance.evaluation": 120000})}, counted before
    the drop. With `dry_run`, count only. The batched deletes that follow then find nothing left in
    those months. Audit checkpoints are already recorded for every tenant when this runs, and an
    audit partition holding a row no checkpoint covers yet is kept (the batched prune deals with it).

    Only partitioned tables (PostgreSQL's reports, spans, evaluations and audit log) have partitions;
    on SQLite, and for the other tables, this removes nothing.
    """
    removed: dict[int, Counter] = {}
    models_by_label = {_label(model): model for model, _ in run_children()} | {RUNS: Run, AUDIT: AuditEvent}
    for label, cutoff in cutoffs.items():
        model = models_by_label.get(label)
        if cutoff is None or model is None:
            continue
        connection = connections[router.db_for_write(model)]
        table = model._meta.db_table
        if table not in partitioned_tables(connection):
            continue
        for partition in partitions_older_than(table, cutoff, connection):
            counts = _partition_rows(connection, partition.name, audit=model is AuditEvent and not dry_run)
            if counts is None:
                log.warning("retention: %s holds audit rows no checkpoint covers yet; kept", partition.name)
                continue
            if not dry_run:
                drop_partition(partition.name, connection)
            for tenant_id, n in counts.items():
                removed.setdefault(tenant_id, Counter())[label] += n
            log.info(
                "retention: %s %s (%d rows)",
                "would drop" if dry_run else "dropped",
                partition.name,
                sum(counts.values()),
            )
    return removed


def _partition_rows(connection, name: str, *, audit: bool) -> dict[int, int] | None:
    """Rows of one partition per tenant id; None for an audit partition with a row past its tenant's
    latest checkpoint (dropping it would cut the chain where verification does not expect it)."""
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tenant_id, count(*), {'max(seq)' if audit else '0'} FROM {qn(name)} GROUP BY tenant_id")
        rows = cursor.fetchall()
    if audit:
        covered = dict(
            AuditCheckpoint.objects.filter(tenant_id__in=[r[0] for r in rows])
            .values("tenant_id")
            .annotate(seq=Max("seq"))
            .values_list("tenant_id", "seq")
        )
        if any(last > covered.get(tenant_id, 0) for tenant_id, _, last in rows):
            return None
    return {tenant_id: n for tenant_id, n, _ in rows}


@dataclass
class TenantResult:
    tenant: Tenant
    runs_before: datetime | None
    audit_before: datetime | None
    removed: Counter = field(default_factory=Counter)
    audit: AuditPrune | None = None

    @property
    def summary(self) -> dict:
        checkpoint = self.audit.checkpoint if self.audit else None
        return {
            "retention_days": self.tenant.retention_days,
            "audit_retention_days": self.tenant.audit_retention_days,
            "runs_before": self.runs_before.isoformat() if self.runs_before else None,
            "audit_before": self.audit_before.isoformat() if self.audit_before else None,
            "removed": {label: n for label, n in sorted(self.removed.items()) if n},
            "audit_rows_removed": self.audit.removed if self.audit else 0,
            "audit_checkpoint": {"seq": checkpoint.seq, "hash": checkpoint.hash} if checkpoint else None,
        }


def _batches(queryset, batch: int):
    """Primary keys of `queryset` in ascending batches, by keyset, so each read is one index range."""
    last = 0
    while True:
        ids = list(queryset.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:batch])
        if not ids:
            return
        yield ids
        last = ids[-1]


def _delete_under_runs(model, fk: str, run_ids: list[int], batch: int) -> int:
    removed = 0
    rows = model._base_manager.filter(**{f"{fk}__in": run_ids})
    while True:
        with transaction.atomic():
            ids = list(rows.values_list("pk", flat=True)[:batch])
            if not ids:
                return removed
            removed += delete_by_ids(model, ids)


def runs_delete_expired(*, tenant: Tenant, before: datetime, batch: int = BATCH) -> Counter:
    """Delete the tenant's expired runs and everything under them in bounded batches."""
    removed: Counter = Counter()
    children = run_children()
    for run_ids in _batches(expired_runs(tenant=tenant, before=before), batch):
        for model, fk in children:
            removed[_label(model)] += _delete_under_runs(model, fk, run_ids, batch)
        try:
            with transaction.atomic():
                removed[RUNS] += delete_by_ids(Run, run_ids)
        except IntegrityError:
            # A row was written under one of these runs since its children went: the runs stay
            # (now nearly empty) and the next pass takes them.
            log.warning("retention: %d runs of tenant %s left for the next pass", len(run_ids), tenant.slug)
    return removed


def runs_count_expired(*, tenant: Tenant, before: datetime) -> Counter:
    """What `runs_delete_expired` would remove, counted (the dry run)."""
    expired = expired_runs(tenant=tenant, before=before)
    counts = Counter({RUNS: expired.count()})
    for model, fk in run_children():
        counts[_label(model)] = model._base_manager.filter(**{f"{fk}__in": expired.values("pk")}).count()
    return counts


def retention_apply(
    *, now: datetime | None = None, tenant: Tenant | None = None, dry_run: bool = False, batch: int = BATCH
) -> list[TenantResult]:
    """One retention pass over every tenant (or one): see the module's docstring for the steps."""
    now = now or timezone.now()
    with scopes_disabled():
        tenants = [tenant] if tenant is not None else list(Tenant.objects.order_by("pk"))
        plans = [tenant_plan(t, now=now) for t in tenants]
        results = {p.tenant.pk: TenantResult(p.tenant, p.runs_before, p.audit_before) for p in plans}
        if not dry_run:
            for p in plans:
                if p.audit_before is not None:
                    audit_checkpoint_record(tenant=p.tenant, before=p.audit_before)
        if tenant is None:
            # Partitions hold every tenant's rows: only a pass over all of them may drop one.
            dropped = drop_partitions(cutoffs=shared_cutoffs(plans), dry_run=dry_run)
            # A dry run drops nothing, so the counts below find those rows again (every row of a
            # droppable month belongs to an expired run or a checkpointed audit row): not twice.
            for tenant_id, counts in dropped.items() if not dry_run else ():
                if tenant_id in results:
                    results[tenant_id].removed.update(counts)
    for p in plans:
        if p.runs_before is None and p.audit_before is None:
            continue
        result = results[p.tenant.pk]
        with scope(tenant=p.tenant):
            if p.runs_before is not None:
                if dry_run:
                    result.removed.update(runs_count_expired(tenant=p.tenant, before=p.runs_before))
                else:
                    result.removed.update(runs_delete_expired(tenant=p.tenant, before=p.runs_before, batch=batch))
            if p.audit_before is not None:
                result.audit = audit_log_prune(tenant=p.tenant, before=p.audit_before, dry_run=dry_run, batch=batch)
            if not dry_run:
                audit_record(tenant=p.tenant, action=ACTION, actor=ACTOR, obj=p.tenant, after=result.summary)
    return [results[p.tenant.pk] for p in plans if p.runs_before is not None or p.audit_before is not None]
