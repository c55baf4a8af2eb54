"""Does a run's Trace tab cost more the more grounding reports the run holds? 10 reports vs 2,000.

    .venv/bin/python bench/trace_page.py [--reports 2000] [--small 10] [--reps 15]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gr_trace_bench .venv/bin/python bench/trace_page.py

On the PostgreSQL database DATABASE_URL names (dropped and created afresh, and dropped at the end),
or else on a fresh SQLite file in a temporary directory. One tenant, two runs of the same shape: 20
spans, a before_workflow and an after_workflow decision, and reports of three ~1 KB sources (stored
once per run, as the API stores them), three citations and a mid_execution decision with three
policies' evaluations each; the small run has `--small` reports, the big one `--reports`. The rows
are bulk-written (what the tab reads, not how the API writes it: bench/run_growth.py measures that).

A signed-in reviewer then asks for each run's Trace tab in turn, `--reps` times, through Django's
test client in this process: the time is the server's (middleware, queries, template), no network.
Asking in turn keeps a load change on a shared machine from reading as growth. Prints per run the
median wall time, the median "work" (this process's CPU plus the statements' time), the queries, and
`ratio=<big/small>` of the median work (target <= 2).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import ROOT, create_database, drop_database, server_env

TARGET_RATIO = 2.0
POLICIES = ("Grounding", "Citations must resolve", "Confidence")
FILLER = "Central banks raised rates through the year while inflation eased, analysts said. "


def build_run(tenant, reports: int):
    """A finished run with 20 spans and `reports` reports, each with its decision and evaluations."""
    from django.utils import timezone

    from governance import services
    from governance.models import Decision, Evaluation, GroundingReport, Run, RunSource, Span

    run, _ = services.run_start(tenant=tenant, agent_name="bench-agent", workflow_name="trace", input={})
    t0 = timezone.now() - timedelta(hours=1)
    Span.objects.bulk_create(
        Span(
            tenant=tenant,
            run=run,
            kind="tool",
            name=f"step {n}",
            started_at=t0 + timedelta(seconds=n),
            ended_at=t0 + timedelta(seconds=n + 1),
            span_id=f"s{n}",
        )
        for n in range(20)
    )
    texts = {(n, k): (f"Report {n}, source {k}. " + FILLER * 13)[:1000] for n in range(reports) for k in range(3)}
    digests = {key: hashlib.sha256(text.encode()).hexdigest() for key, text in texts.items()}
    RunSource.objects.bulk_create(
        (
            RunSource(tenant=tenant, run=run, source_id=f"r{n}-s{k}", content_hash=digests[n, k], text=text)
            for (n, k), text in texts.items()
        ),
        batch_size=500,
    )
    rows = GroundingReport.objects.bulk_create(
        (
            GroundingReport(
                tenant=tenant,
                run=run,
                seq=n + 1,
                grounding_scores=[0.92, 0.87, 0.81],
                citations=[{"source_id": f"r{n}-s0", "quote": f"Report {n}"}, f"r{n}-s1", "r0-s2"],
                output_confidence=0.88,
                output=f"Answer after step {n}.",
                source_refs=[{"id": f"r{n}-s{k}", "sha256": digests[n, k], "score": 0.9} for k in range(3)],
                created_at=t0 + timedelta(seconds=20 + n),
            )
            for n in range(reports)
        ),
        batch_size=500,
    )
    decisions = Decision.objects.bulk_create(
        (
            Decision(tenant=tenant, run=run, report=r, phase="mid_execution", action="allow", created_at=r.created_at)
            for r in rows
        ),
        batch_size=500,
    )
    Evaluation.objects.bulk_create(
        (
            Evaluation(
                tenant=tenant,
                run=run,
                decision=d,
                policy_name=policy,
                category="grounding",
                agent_name="bench-agent",
                phase="mid_execution",
                action="allow",
                metadata={"threshold": 0.7},
                created_at=d.created_at,
            )
            for d in decisions
            for policy in POLICIES
        ),
        batch_size=500,
    )
    Run.objects.filter(pk=run.pk).update(report_count=reports)
    services.run_complete(tenant=tenant, run_id=run.pk)
    return run


def measure(args) -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django_scopes import scopes_disabled

    from tenants import services as tenant_services
    from tenants.audit import Actor
    from tenants.models import Role

    actor = Actor.system("bench")
    tenant = tenant_services.tenant_create(slug="trace", name="Trace", actor=actor)
    user = get_user_model().objects.create_user(username="trace-reviewer", password="trace-bench-password")
    tenant_services.membership_set(tenant=tenant, user=user, role=Role.REVIEWER, actor=actor)
    started = time.perf_counter()
    with scopes_disabled():
        runs = {"small": build_run(tenant, args.small), "big": build_run(tenant, args.reports)}
    print(f"loaded runs of {args.small} and {args.reports} reports in {time.perf_counter() - started:.1f} s")
    client = Client()
    client.force_login(user)
    urls = {label: f"/runs/{run.pk}/?tab=trace" for label, run in runs.items()}
    for url in urls.values():
        client.get(url)  # warm: templates, the session, the plan cache
    times: dict[str, list[float]] = {label: [] for label in urls}
    work: dict[str, list[float]] = {label: [] for label in urls}
    queries: dict[str, int] = {}
    for _ in range(args.reps):
        for label, url in urls.items():
            with CaptureQueriesContext(connection) as captured:
                t0, c0 = time.perf_counter(), time.process_time()
                response = client.get(url)
                c1, t1 = time.process_time(), time.perf_counter()
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code}")
            times[label].append((t1 - t0) * 1000)
            work[label].append((c1 - c0) * 1000 + sum(float(q["time"]) for q in captured.captured_queries) * 1000)
            queries[label] = len(captured.captured_queries)
    print(f"database: {connection.vendor}; Django test client in process, DEBUG off; {args.reps} requests each")
    for label, reports in (("small", args.small), ("big", args.reports)):
        print(
            f"trace tab, {reports:>5} reports: median {statistics.median(times[label]):7.1f} ms wall, "
            f"{statistics.median(work[label]):7.1f} ms work, {queries[label]} queries"
        )
    ratio = statistics.median(work["big"]) / statistics.median(work["small"])
    print(f"target: ratio <= {TARGET_RATIO:g} ({'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    print(f"wall_ratio={statistics.median(times['big']) / statistics.median(times['small']):.2f}")
    print(f"ratio={ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=2000)
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    postgres = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
    tmp = tempfile.TemporaryDirectory()
    database_url = create_database() if postgres else f"sqlite:///{tmp.name}/trace_page.sqlite3"
    env = server_env(database_url)
    env.update({"ALLOWED_HOSTS": "testserver", "LOG_LEVEL": "ERROR"})
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    try:
        measure(args)
    finally:
        from django.db import connections

        connections.close_all()
        if postgres:
            drop_database()
        tmp.cleanup()


if __name__ == "__main__":
    main()
