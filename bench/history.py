"""What the PostgreSQL benchmarks over stored history share: a database of their own, and runs of
grounding reports stored as the report path stores them (references on the report, texts once per run).

Used by bench/replay.py and bench/policy_plan.py. PostgreSQL comes from BENCH_PG
(default postgres://postgres@127.0.0.1:5432).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager

from report import server_env

PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432").rstrip("/")


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


@contextmanager
def throwaway_database(name: str, *, keep: bool = False) -> Iterator[None]:
    """A fresh database for this process's Django settings (bench/report.py's production-like ones),
    dropped afterwards unless ``keep``."""
    _admin(f'DROP DATABASE IF EXISTS "{name}"')
    _admin(f'CREATE DATABASE "{name}"')
    os.environ.update(server_env(f"{PG}/{name}"))
    os.environ.setdefault("CONN_MAX_AGE", "0")
    try:
        yield
    finally:
        from django.db import connections

        connections.close_all()
        if not keep:
            _admin(f'DROP DATABASE IF EXISTS "{name}"')


def store_reports(tenant, *, reports: int, per_run: int, seed: int, spread_minutes: float = 0) -> int:
    """``reports`` grounding reports, ``per_run`` to a run, with varied scores, citations, claims and
    confidences; the runs start over the last ``spread_minutes``. Answers how many runs were stored."""
    from datetime import timedelta

    from django.utils import timezone

    from governance import rows as row_mapping
    from governance.models import GroundingReport, Run, RunSource

    rng = random.Random(seed)
    runs_n = max(1, reports // per_run)
    now = timezone.now()
    runs = Run.objects.bulk_create(
        [
            Run(
                tenant=tenant,
                agent_name=f"agent-{i % 7}",
                status="completed",
                started_at=now - timedelta(minutes=spread_minutes * i / runs_n + (1 if spread_minutes else 0)),
                ended_at=now,
                output=f"Answer {i}",
                report_count=per_run,
            )
            for i in range(runs_n)
        ],
        batch_size=5000,
    )
    rows, sources = [], []
    for run in runs:
        for seq in range(1, per_run + 1):
            refs, run_sources = row_mapping.source_rows(
                run=run, sources=[{"id": f"doc-{rng.randint(1, 50)}", "text": "Some source text."}]
            )
            sources += run_sources
            rows.append(
                GroundingReport(
                    tenant=tenant,
                    run=run,
                    seq=seq,
                    grounding_scores=[round(rng.uniform(0.4, 1.0), 3) for _ in range(rng.randint(1, 4))],
                    citations=[f"doc-{rng.randint(1, 50)}" for _ in range(rng.randint(0, 3))],
                    unsupported_claims=["claim"] if rng.random() < 0.1 else [],
                    output_confidence=round(rng.uniform(0.2, 1.0), 2) if rng.random() < 0.5 else None,
                    output="An answer with some text.",
                    source_refs=refs,
                )
            )
        if len(rows) >= 10_000:
            GroundingReport.objects.bulk_create(rows, batch_size=5000)
            RunSource.objects.bulk_create(sources, batch_size=5000, ignore_conflicts=True)
            rows, sources = [], []
    GroundingReport.objects.bulk_create(rows, batch_size=5000)
    RunSource.objects.bulk_create(sources, batch_size=5000, ignore_conflicts=True)
    return runs_n
