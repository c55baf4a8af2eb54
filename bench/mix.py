"""CPU per request of each operation of bench/load.py's mix, in process, against GET /api/v1/ping/.

    .venv/bin/python bench/mix.py [--reps 200] [--history 120] [--ops start,run_read,...]

bench/load.py's p99 at half the peak is queueing on two cores (docs/reliability.md): it falls only
with the mean CPU per request. This measures that CPU one operation at a time, with Django's test
client in one process (no HTTP, no gunicorn, no other clients), so that a change to one path shows
in its own figure rather than in the noise of the load test.

Creates a fresh PostgreSQL database (``groundrule_mix``, dropped at the end; DATABASE_URL's when it
names PostgreSQL, else BENCH_PG), migrates it and sets up what bench/load.py does: a tenant with its
five grounding policies and the local-verifier policy, an admin key and a signed-in reviewer. One
shared run first takes ``--history`` reports (bench/load.py's shared runs hold about that many by
its half-peak phase). Then, per operation, ``--reps`` calls, timed by the process's CPU clock
(``time.process_time``: PostgreSQL's own work is not in it) and the wall clock, with the SQL queries
of one call counted:

- ping (the baseline), start, report_shared (into the shared run), report_own (into a run of a
  few reports), complete (a run with one report with sources; the after_workflow verifier runs
  inline, as in bench/load.py), run_read (the shared run over the API), page (the dashboard's runs
  page), check (an on-demand grounding check: the verifier).

Prints one line per operation with its CPU ms, wall ms, queries and ratio to ping, then
``mix_cpu_ms=`` (the mean over bench/load.py's weights) and last ``ratio=<mix ÷ ping>``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import AGENT, MIX, OUTPUT, SOURCES, VERIFIER_POLICY, fresh_claim
from report import PG, POLICIES, REPORT, ROOT, server_env

DB_NAME = os.environ.get("MIX_DB", "groundrule_mix")
# The shared run is read before reports go into it, so that it holds the --history reports it says.
OPS = ("ping", "start", "run_read", "page", "report_shared", "report_own", "complete", "check")


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200, help="calls per operation")
    parser.add_argument("--history", type=int, default=120, help="reports in the shared run before timing")
    parser.add_argument("--ops", default=",".join(OPS))
    args = parser.parse_args()
    ops = args.ops.split(",")
    unknown = sorted(set(ops) - set(OPS))
    if unknown:
        parser.error(f"unknown operations: {', '.join(unknown)}")

    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{DB_NAME}"')
    env = server_env(f"{PG}/{DB_NAME}")
    # The test client's host; no broker: nothing here queues work (score audits are off, as in
    # bench/report.py) but what the verifier policy asks for inline.
    env.update({"ALLOWED_HOSTS": "testserver", "LOG_LEVEL": "ERROR"})
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    try:
        figures = measure(args, ops)
    finally:
        from django.db import connections

        connections.close_all()
        _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    report(figures)


def measure(args, ops: list[str]) -> dict[str, dict]:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django_scopes import scope

    from policies import services as policy_services
    from tenants import services as tenant_services
    from tenants.audit import Actor
    from tenants.models import Role

    actor = Actor.system("bench")
    tenant = tenant_services.tenant_create(slug="mix", name="Mix", actor=actor)
    tenant.score_audit_rate = 0.0  # no sampled audit queued (bench/report.py does the same)
    tenant.save(update_fields=["score_audit_rate"])
    _, raw = tenant_services.api_key_create(tenant=tenant, name="mix", actor=actor, scope="admin")
    user = get_user_model().objects.create_user(username="reviewer", password="mix-bench-password")
    tenant_services.membership_set(tenant=tenant, user=user, role=Role.REVIEWER, actor=actor)
    with scope(tenant=tenant):
        for name, rules, agents in [*POLICIES, VERIFIER_POLICY]:
            policy_services.policy_create(
                tenant=tenant, actor=actor, name=name, category="grounding", rules=rules, scope={"agents": agents}
            )

    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    browser = Client()
    browser.force_login(user)
    rng = random.Random(14)
    body = {**REPORT, "output": OUTPUT, "sources": SOURCES, "citations": ["fed-2023", "imf-2023"]}

    def call(method: str, path: str, data=None, client=api) -> None:
        if method == "GET":
            response = client.get(path)
        else:
            response = client.post(path, json.dumps(data), content_type="application/json")
        if response.status_code >= 300:
            raise SystemExit(f"{method} {path}: {response.status_code} {response.content[:300]!r}")

    def start() -> int:
        response = api.post("/api/v1/runs/", json.dumps({"agent_name": AGENT}), content_type="application/json")
        return response.json()["run_id"]

    shared, own = start(), start()
    for _ in range(args.history):
        call("POST", f"/api/v1/runs/{shared}/grounding/", body)
    for _ in range(3):
        call("POST", f"/api/v1/runs/{own}/grounding/", body)
    # Completes need runs of their own, each with a report (its sources are what the verifier reads):
    # made before timing, so that only the completion is timed.
    to_complete = []
    if "complete" in ops:
        for _ in range(args.reps + 5):
            run_id = start()
            call("POST", f"/api/v1/runs/{run_id}/grounding/", body)
            to_complete.append(run_id)
    pending = iter(to_complete)

    actions = {
        "ping": lambda: call("GET", "/api/v1/ping/"),
        "start": lambda: call("POST", "/api/v1/runs/", {"agent_name": AGENT}),
        "report_shared": lambda: call("POST", f"/api/v1/runs/{shared}/grounding/", body),
        "report_own": lambda: call("POST", f"/api/v1/runs/{own}/grounding/", body),
        "complete": lambda: call("POST", f"/api/v1/runs/{next(pending)}/complete/", {"output": fresh_claim(rng)}),
        "run_read": lambda: call("GET", f"/api/v1/runs/{shared}/"),
        "page": lambda: call("GET", "/runs/", client=browser),
        "check": lambda: call("POST", "/api/v1/grounding/check/", {"text": fresh_claim(rng), "sources": SOURCES}),
    }
    figures = {}
    for op in ["ping", *(op for op in ops if op != "ping")]:
        action = actions[op]
        for _ in range(3):  # warm: caches, prepared statements, the verifier's models
            action()
        queries: list[str] = []

        def counted(execute, sql, params, many, context, queries=queries):
            queries.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counted):
            action()
        reps = args.reps - 4 if op == "complete" else args.reps  # four completions went to warming
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(reps):
            action()
        figures[op] = {
            "cpu_ms": (time.process_time() - cpu) / reps * 1000,
            "wall_ms": (time.perf_counter() - wall) / reps * 1000,
            "queries": len(queries),
        }
    return figures


def report(figures: dict[str, dict]) -> None:
    ping = figures["ping"]["cpu_ms"]
    print(f"{'operation':<14}{'cpu ms':>9}{'wall ms':>9}{'queries':>9}{'x ping':>8}")
    for op, f in figures.items():
        print(f"{op:<14}{f['cpu_ms']:>9.2f}{f['wall_ms']:>9.2f}{f['queries']:>9}{f['cpu_ms'] / ping:>8.1f}")
    measured = [(figures[op]["cpu_ms"], weight) for op, weight in MIX if op in figures]
    mix = sum(ms * w for ms, w in measured) / sum(w for _, w in measured)
    print(f"mix_cpu_ms={mix:.2f} (bench/load.py's weights, over the operations measured)")
    print(f"ratio={mix / ping:.2f}")


if __name__ == "__main__":
    main()
