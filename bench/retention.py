"""Time a retention pass on PostgreSQL, and what it costs the write path running beside it.

    DATABASE_URL=postgres://…/DB .venv/bin/python bench/retention.py [--runs 20000] [--batch 1000]

The database must be migrated and is written to: use a scratch one. Makes a new tenant `bench-retention-<time>`
(left there: the audit log cannot be deleted) with `--runs` completed runs, half ended 60 days ago and half today, each
with one grounding report, its run source, one span, one decision and three evaluations. Then, with
retention 30 days:

- a writer thread appends a report, a decision and three evaluations to an open run, each in its own
  transaction that locks the run row (as the report path does), for 5 s alone, then during the pass;
- the pass (`retention_apply`, one tenant).

Prints the rows removed, the pass's time and rows/s, and the writer's median, p99 and maximum
latency alone and during the pass.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")

import django

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_scopes import scopes_disabled  # noqa: E402

from governance.models import Decision, Evaluation, GroundingReport, Run, RunSource, Span  # noqa: E402
from governance.retention import retention_apply  # noqa: E402
from tenants.audit import Actor  # noqa: E402
from tenants.models import Tenant  # noqa: E402
from tenants.services import tenant_create, tenant_set_retention  # noqa: E402

SLUG = f"bench-retention-{int(time.time())}"
ACTOR = Actor.system("bench")


def seed(tenant: Tenant, runs: int) -> Run:
    now = timezone.now()
    old = now - timedelta(days=60)
    step = 2000
    for start in range(0, runs, step):
        count = min(step, runs - start)
        when = [old if (start + i) % 2 == 0 else now for i in range(count)]
        with transaction.atomic():
            rows = Run.objects.bulk_create(
                Run(tenant=tenant, agent_name="bench", status="completed", started_at=w, ended_at=w) for w in when
            )
            reports = GroundingReport.objects.bulk_create(
                GroundingReport(tenant=tenant, run=r, seq=1, grounding_scores=[0.9], created_at=r.started_at)
                for r in rows
            )
            RunSource.objects.bulk_create(
                RunSource(tenant=tenant, run=r, source_id="s", content_hash="0" * 64, text="t" * 200) for r in rows
            )
            Span.objects.bulk_create(
                Span(tenant=tenant, run=r, kind="tool", name="search", created_at=r.started_at) for r in rows
            )
            decisions = Decision.objects.bulk_create(
                Decision(
                    tenant=tenant, run=r, report=rep, phase="mid_execution", action="allow", created_at=r.started_at
                )
                for r, rep in zip(rows, reports, strict=True)
            )
            Evaluation.objects.bulk_create(
                Evaluation(
                    tenant=tenant,
                    run=d.run,
                    decision=d,
                    policy_name=f"p{k}",
                    category="grounding",
                    agent_name="bench",
                    phase="mid_execution",
                    action="allow",
                    created_at=d.created_at,
                )
                for d in decisions
                for k in range(3)
            )
    return Run.objects.create(tenant=tenant, agent_name="bench-live")


def writer(tenant: Tenant, run_id: int, stop: threading.Event, latencies: list[float]) -> None:
    seq = GroundingReport.objects.filter(run_id=run_id).count()
    try:
        while not stop.is_set():
            seq += 1
            began = time.perf_counter()
            with transaction.atomic():
                run = Run.objects.select_for_update().get(pk=run_id)
                report = GroundingReport.objects.create(tenant=tenant, run=run, seq=seq, grounding_scores=[0.8])
                decision = Decision.objects.create(
                    tenant=tenant, run=run, report=report, phase="mid_execution", action="allow"
                )
                Evaluation.objects.bulk_create(
                    Evaluation(
                        tenant=tenant,
                        run=run,
                        decision=decision,
                        policy_name=f"p{k}",
                        category="grounding",
                        agent_name="bench-live",
                        phase="mid_execution",
                        action="allow",
                    )
                    for k in range(3)
                )
            latencies.append(time.perf_counter() - began)
    finally:
        connection.close()


def measure(tenant: Tenant, run_id: int, during) -> list[float]:
    latencies: list[float] = []
    stop = threading.Event()

    def target():
        with scopes_disabled():
            writer(tenant, run_id, stop, latencies)

    thread = threading.Thread(target=target)
    thread.start()
    try:
        during()
    finally:
        stop.set()
        thread.join()
    return latencies


def describe(latencies: list[float]) -> str:
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"{len(ms)} writes, median {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("needs DATABASE_URL pointing at a migrated PostgreSQL scratch database")
    with scopes_disabled():
        tenant = tenant_create(slug=SLUG, actor=ACTOR)
        began = time.perf_counter()
        live = seed(tenant, args.runs)
        print(f"seeded {args.runs} runs (half expired) in {time.perf_counter() - began:.1f} s")
        tenant_set_retention(tenant=tenant, retention_days=30, audit_retention_days=None, actor=ACTOR)
        tenant.refresh_from_db()
        alone = measure(tenant, live.pk, lambda: time.sleep(5))
        print(f"writer alone:       {describe(alone)}")
        outcome = {}

        def apply():
            began = time.perf_counter()
            [outcome["result"]] = retention_apply(tenant=tenant, batch=args.batch)
            outcome["seconds"] = time.perf_counter() - began

        beside = measure(tenant, live.pk, apply)
        removed = outcome["result"].removed
        total = sum(removed.values())
        print(f"writer beside pass: {describe(beside)}")
        print(
            f"pass: {total} rows in {outcome['seconds']:.1f} s ({total / outcome['seconds']:.0f} rows/s), "
            f"batch {args.batch}: {dict(sorted(removed.items()))}"
        )


if __name__ == "__main__":
    main()
