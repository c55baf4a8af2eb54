"""The runs, violations and overview pages on a tenant with 100,000 runs and 1,000,000 evaluations, on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gr_bench .venv/bin/python bench/pages_at_volume.py \
        [--runs 100000] [--evaluations-per-run 10] [--reps 15] [--keep]

Creates the database DATABASE_URL names (dropped first, and at the end unless --keep), migrates it, and
bulk-loads two tenants with COPY: the big one (``--runs`` runs, ten evaluations each by default) and a
baseline of 1,000 runs with the same shape. Every run carries what the runs list shows (final action,
worst score, reports, duration, judge cost); evaluations spread over thirty days, five policies, ten
agents, one in three a violation. Then ANALYZE, and each page is requested ``--reps`` times by a
signed-in reviewer of each tenant through Django's test client in this process: the time is the
server's (middleware, queries, template), no network. Prints per page the median and p95 wall time on
the big tenant, the median "work" (this process's CPU plus the statements' time, which leaves out the
waits for a core on a shared machine), the baseline's median wall time and work, the ratio of the
medians, and the page's queries. The target is a median under 300 ms on the big tenant. Last, the
30-day overview's median with an empty cache: the first view of the day, which reads the whole month.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import PG, ROOT, server_env

DB_NAME = os.environ.get("DATABASE_URL", "").rpartition("/")[2] or "gr_pages_at_volume"
TARGET_MS = 300.0
POLICIES = [f"Grounding policy {n}" for n in range(5)]
AGENTS = [f"agent-{n}" for n in range(10)]
PHASES = ("before_workflow", "mid_execution", "mid_execution", "mid_execution", "after_workflow")

PAGES = [
    ("runs: first page", "/runs/"),
    ("runs: sorted by worst score", "/runs/?sort=score"),
    ("runs: sorted by judge cost", "/runs/?sort=-cost"),
    ("runs: sorted by final action", "/runs/?sort=-action"),
    ("runs: sorted by reports (no index)", "/runs/?sort=-reports"),
    ("runs: sorted by duration, 2nd page", "/runs/?sort=-duration&cursor={duration_cursor}"),
    ("runs: filtered agent + block", "/runs/?agent=agent-3&final_action=block"),
    ("runs: filtered policy + sorted score", "/runs/?policy=Grounding+policy+2&sort=score"),
    ("violations: first page", "/violations/"),
    ("violations: filtered block + agent", "/violations/?action=block&agent=agent-4"),
    ("violations: filtered pending + policy", "/violations/?review_state=pending&policy=Grounding+policy+1"),
    ("violations: an older page", "/violations/?before={violation_middle}"),
    ("overview: last 24 hours", "/"),
    ("overview: last 30 days", "/?period=30d"),
]


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def _copy(cursor, table: str, columns: list[str], rows) -> None:
    """COPY rows (tuples of text or None) into table, in chunks of text."""
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def load(tenant_id: int, runs: int, per_run: int, seed: int) -> float:
    """Bulk-load runs and evaluations for a tenant; returns seconds taken."""
    from django.db import connection

    from governance.models import Evaluation, Run

    rng = random.Random(seed)
    now = datetime.now(UTC)
    started = time.perf_counter()
    run_table, evaluation_table = Run._meta.db_table, Evaluation._meta.db_table
    with connection.cursor() as cursor:
        raw = cursor.cursor
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {run_table}")
        first_id = cursor.fetchone()[0] + 1
        plan = []
        run_rows = []
        for n in range(runs):
            at = now - timedelta(seconds=rng.randint(0, 30 * 86400))
            running = rng.random() < 0.03
            action = rng.choices(["allow", "warn", "block"], [7, 2, 1])[0]
            duration = None if running else rng.randint(200, 60_000)
            reports = rng.randint(1, 8)
            plan.append((first_id + n, at, action, rng.choice(AGENTS)))
            run_rows.append(
                (
                    tenant_id,
                    plan[-1][3],
                    rng.choice(["answer", "summarise", "triage"]),
                    "{}",
                    "running" if running else ("blocked" if action == "block" else "completed"),
                    action,
                    at,
                    None if running else at + timedelta(milliseconds=duration),
                    "",
                    "",
                    reports,
                    round(rng.random(), 3),
                    rng.choice([0.0, 0.0, 0.0, round(rng.random() / 100, 6)]),
                    duration,
                )
            )
        columns = [
            "tenant_id",
            "agent_name",
            "workflow_name",
            "metadata",
            "status",
            "final_action",
            "started_at",
            "ended_at",
            "output",
            "error",
            "report_count",
            "worst_score",
            "judge_cost",
            "duration_ms",
        ]
        _copy(raw, run_table, columns, run_rows)
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{run_table}', 'id'), (SELECT MAX(id) FROM {run_table}))")

        def evaluations():
            for run_id, at, final, agent in plan:
                for k in range(per_run):
                    policy = k % len(POLICIES)
                    action = final if k == per_run - 1 else rng.choices(["allow", "warn", "block"], [13, 4, 2])[0]
                    yield (
                        tenant_id,
                        run_id,
                        policy + 1,
                        POLICIES[policy],
                        1,
                        "grounding",
                        agent,
                        PHASES[k % len(PHASES)],
                        action,
                        f"Grounding score ({rng.random():.2f}) below threshold (0.7)" if action != "allow" else "",
                        '{"score": 0.42, "threshold": 0.7}',
                        "engine",
                        False,
                        at + timedelta(milliseconds=k * 50),
                        "pending" if rng.random() < 0.8 else rng.choice(["confirmed", "dismissed"]),
                        "",
                    )

        columns = [
            "tenant_id",
            "run_id",
            "policy_ref",
            "policy_name",
            "policy_version",
            "category",
            "agent_name",
            "phase",
            "action",
            "reason",
            "metadata",
            "source",
            "shadow",
            "created_at",
            "review_state",
            "review_comment",
        ]
        _copy(raw, evaluation_table, columns, evaluations())
    return time.perf_counter() - started


def measure(args) -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from tenants import services as tenant_services
    from tenants.audit import Actor
    from tenants.models import Role

    actor = Actor.system("bench")
    clients, tenants = {}, {}
    for slug, runs in (("big", args.runs), ("baseline", 1000)):
        tenant = tenant_services.tenant_create(slug=slug, name=slug.title(), actor=actor)
        user = get_user_model().objects.create_user(username=f"{slug}-reviewer", password="pages-bench-password")
        tenant_services.membership_set(tenant=tenant, user=user, role=Role.REVIEWER, actor=actor)
        seconds = load(tenant.pk, runs, args.evaluations_per_run, seed=len(slug))
        print(f"loaded {slug}: {runs:,} runs, {runs * args.evaluations_per_run:,} evaluations in {seconds:.1f} s")
        client = Client()
        client.force_login(user)
        clients[slug], tenants[slug] = client, tenant
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"ANALYZE in {time.perf_counter() - started:.1f} s")

    def placeholders(slug) -> dict:
        from django_scopes import scopes_disabled

        from governance.models import Evaluation
        from governance.selectors.run_list import SORTS, sorted_page

        with scopes_disabled():
            from governance.models import Run

            page = sorted_page(Run.objects.filter(tenant=tenants[slug]), SORTS["duration"], True, None)
            ids = Evaluation.objects.filter(tenant=tenants[slug], action__in=("warn", "block")).order_by("id")
            middle = ids.values_list("id", flat=True)[ids.count() // 2]
        return {"duration_cursor": page.next_cursor, "violation_middle": middle}

    filled = {slug: placeholders(slug) for slug in clients}
    print()
    heads = ("big p50", "big p95", "big work", "base p50", "base work")
    print(f"{'page':40} " + " ".join(f"{h:>9}" for h in heads) + f" {'ratio':>6} {'queries':>7}")
    worst = 0.0
    for label, template in PAGES:
        figures = {}
        for slug, client in clients.items():
            url = template.format(**filled[slug])
            client.get(url)  # warm: templates, the session, the plan cache
            times, work = [], []
            for _ in range(args.reps):
                with CaptureQueriesContext(connection) as queries:
                    t0, c0 = time.perf_counter(), time.process_time()
                    response = client.get(url)
                    c1, t1 = time.process_time(), time.perf_counter()
                times.append((t1 - t0) * 1000)
                # This process's CPU plus the statements' time: the server's own work, less the waits for
                # a core that other processes on a shared machine add to the wall clock.
                work.append((c1 - c0) * 1000 + sum(float(q["time"]) for q in queries.captured_queries) * 1000)
                if response.status_code != 200:
                    raise SystemExit(f"{url}: {response.status_code}")
            times.sort()
            figures[slug] = (
                statistics.median(times),
                times[int(len(times) * 0.95) - 1],
                len(queries),
                statistics.median(work),
            )
        big, base = figures["big"], figures["baseline"]
        worst = max(worst, big[0])
        print(
            f"{label:40} {big[0]:9.1f} {big[1]:9.1f} {big[3]:9.1f} {base[0]:9.1f} {base[3]:9.1f} "
            f"{big[0] / base[0]:6.2f} {big[2]:7d}"
        )
    # The overview keeps whole past days' violation counts in the cache (governance/selectors/overview_days.py):
    # the table above is what every view after a day's first sees; this is the first, reading the month.
    from django.core.cache import cache

    cold = []
    for _ in range(args.reps):
        cache.clear()
        t0 = time.perf_counter()
        clients["big"].get("/?period=30d")
        cold.append((time.perf_counter() - t0) * 1000)
    print(f"{'overview: last 30 days, empty cache':40} {statistics.median(cold):9.1f}")
    print()
    print(f"worst median on the big tenant: {worst:.1f} ms (target < {TARGET_MS:.0f} ms)")
    print(f"ok={'yes' if worst < TARGET_MS else 'no'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--evaluations-per-run", type=int, default=10)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="leave the database in place")
    args = parser.parse_args()
    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{DB_NAME}"')
    env = server_env(f"{PG}/{DB_NAME}")
    env.update({"ALLOWED_HOSTS": "testserver", "LOG_LEVEL": "ERROR"})
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    try:
        measure(args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


if __name__ == "__main__":
    main()
