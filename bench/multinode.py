"""Two web nodes and two Celery workers on one PostgreSQL: correctness and scale-out cost.

    .venv/bin/python bench/multinode.py [--seconds 15] [--rounds 2] [--workers 4] [--clients 8]

Creates a fresh database (BENCH_MULTINODE_DB, default ``groundrule_sc``; dropped at the end), a
tenant with five grounding policies and one LLM judge at ``after_workflow`` (queued to Celery,
answered by the local fake provider in tests/fake_llm_server.py), and starts two Celery workers on
Redis (BENCH_REDIS, default redis://127.0.0.1:6379/8). Then, in alternating rounds:

- **one**: one gunicorn instance with ``--workers`` processes (all the cores), every client on it;
- **two**: two gunicorn instances with half the processes each, the clients spread over both.

Each client is an agent: start a run, five grounding reports, complete (which queues the judge),
over and over, on a keep-alive connection. The figures are requests/s of each round. At the end it
waits for the queue to drain and checks, in the database:

- decisions stored == decisions returned (every 2xx answer carried one), reports stored == reports
  answered;
- every completed run has exactly one LLM judgement (none missing, none written twice);

and prints ``ratio=<two rps / one rps>`` (target >= 0.9: the shared database costs nothing extra).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import redis
from report import (
    PG,
    POLICIES,
    PY,
    ROOT,
    _admin,
    free_port,
    server_env,
    setup_data,
    start_server,
    stop_server,
)

sys.path.insert(0, str(ROOT / "tests"))
from fake_llm_server import FakeLLMServer

DB_NAME = os.environ.get("BENCH_MULTINODE_DB", "groundrule_sc")
BROKER = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/8")
AGENT = "research-agent"
REPORTS_PER_RUN = 5
SOURCES = [{"id": "fed-2023", "text": "The Federal Reserve raised interest rates by 0.25 percent in July 2023."}]
OUTPUT = "The Federal Reserve raised interest rates by 0.25 percent in July 2023."
REPORT = {
    "grounding_scores": [0.92, 0.87, 0.81],
    "citations": ["Federal Reserve Report 2024", "IMF Outlook"],
    "unsupported_claims": [],
    "output_confidence": 0.88,
    "output": OUTPUT,
    "sources": SOURCES,
}
JUDGE = (
    "Background judge",
    {
        "min_grounding_score": 0.5,
        "min_citations": 0,
        "action_on_violation": "warn",
        "llm_grounding_check": True,
        "llm_grounding_model": "gpt-4o-mini",
        "llm_grounding_threshold": 0.7,
        "llm_grounding_phase": "after_workflow",
    },
    [AGENT],
)

SECRETS = """
import json, sys
import django
django.setup()
from django_scopes import scope
from tenants.audit import Actor
from tenants import services as tenant_services
from tenants.models import Tenant

tenant = Tenant.objects.get(slug="bench")
with scope(tenant=tenant):
    for name, value in json.loads(sys.argv[1]).items():
        tenant_services.secret_set(tenant=tenant, name=name, value=value, actor=Actor.system("bench"))
"""


# --- The load process ----------------------------------------------------------------------


def agent_loop(port: int, key: str, deadline: float, tally: dict, lock: threading.Lock) -> None:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    mine = {"requests": 0, "decisions": 0, "reports": 0, "completed": [], "errors": []}

    def call(path: str, body: dict) -> dict | None:
        nonlocal conn
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mine["errors"].append(type(exc).__name__)
            return None
        mine["requests"] += 1
        if response.status not in (200, 201):
            mine["errors"].append(str(response.status))
            return None
        payload = json.loads(data)
        if "decision" in payload:
            mine["decisions"] += 1
        return payload

    while time.monotonic() < deadline:
        started = call("/api/v1/runs/", {"agent_name": AGENT})
        if started is None:
            continue
        run_id = started["id"]
        # A different answer each run, so each judgement is a provider call (not the judge's cache).
        output = f"{OUTPUT} Run {run_id}."
        for _ in range(REPORTS_PER_RUN):
            if call(f"/api/v1/runs/{run_id}/grounding/", {**REPORT, "output": output}) is not None:
                mine["reports"] += 1
        if call(f"/api/v1/runs/{run_id}/complete/", {"output": output}) is not None:
            mine["completed"].append(run_id)
    conn.close()
    with lock:
        for name in ("requests", "decisions", "reports"):
            tally[name] += mine[name]
        tally["completed"].extend(mine["completed"])
        tally["errors"].extend(mine["errors"])


def load_main(cfg: dict) -> None:
    tally = {"requests": 0, "decisions": 0, "reports": 0, "completed": [], "errors": []}
    lock = threading.Lock()
    deadline = time.monotonic() + cfg["seconds"]
    ports = cfg["ports"]
    threads = [
        threading.Thread(target=agent_loop, args=(ports[i % len(ports)], cfg["key"], deadline, tally, lock))
        for i in range(cfg["clients"])
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tally["elapsed"] = time.perf_counter() - started
    print(json.dumps(tally))


def drive(ports: list[int], key: str, seconds: float, clients: int) -> dict:
    cfg = {"ports": ports, "key": key, "seconds": seconds, "clients": clients}
    out = subprocess.run([PY, __file__, "--load", json.dumps(cfg)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


# --- The topology ---------------------------------------------------------------------------


def start_workers(env: dict, count: int) -> list[subprocess.Popen]:
    celery = str(Path(PY).with_name("celery"))
    return [
        subprocess.Popen(
            [
                celery,
                "-A",
                "config.celery:app",
                "worker",
                "--concurrency",
                "1",
                "--loglevel",
                "warning",
                "--hostname",
                f"bench{n}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        for n in range(count)
    ]


def decisions_stored(conn, tenant: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM governance_decision d JOIN governance_run r ON r.id = d.run_id WHERE r.tenant_id = %s",
        (tenant,),
    ).fetchone()[0]


def check(database_url: str, tenant_slug: str, returned: dict, wait: float, decisions_before: int) -> dict:
    completed = returned["completed"]
    with psycopg.connect(database_url) as conn:
        tenant = conn.execute("SELECT id FROM tenants_tenant WHERE slug = %s", (tenant_slug,)).fetchone()[0]
        deadline = time.monotonic() + wait
        while True:
            judged = conn.execute(
                "SELECT count(DISTINCT run_id), count(*) FROM governance_evaluation "
                "WHERE tenant_id = %s AND source = 'llm_judge'",
                (tenant,),
            ).fetchone()
            if judged[0] >= len(completed) or time.monotonic() > deadline:
                break
            conn.rollback()
            time.sleep(0.5)
        decisions = decisions_stored(conn, tenant) - decisions_before
        reports = conn.execute(
            "SELECT count(*) FROM governance_groundingreport g JOIN governance_run r "
            "ON r.id = g.run_id WHERE r.tenant_id = %s",
            (tenant,),
        ).fetchone()[0]
        twice = conn.execute(
            "SELECT count(*) FROM (SELECT run_id FROM governance_evaluation WHERE tenant_id = %s "
            "AND source = 'llm_judge' GROUP BY run_id HAVING count(*) > 1) t",
            (tenant,),
        ).fetchone()[0]
    return {
        "decisions_stored": decisions,
        "reports_stored": reports,
        "judged_runs": judged[0],
        "judgements": judged[1],
        "judged_twice": twice,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15, help="seconds of load per round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating one/two rounds")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn processes in all (split over two)")
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8, help="concurrent agents")
    parser.add_argument("--celery-workers", type=int, default=2)
    args = parser.parse_args()

    started = time.monotonic()
    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{DB_NAME}"')
    database_url = f"{PG}/{DB_NAME}"
    redis.Redis.from_url(BROKER).flushdb()
    servers, workers = [], []
    totals = {"requests": 0, "decisions": 0, "reports": 0, "completed": [], "errors": []}
    rounds = {"one": [], "two": []}
    with FakeLLMServer() as llm:
        try:
            env = server_env(database_url)
            env["OUTBOUND_ALLOWED_HOSTS"] = "127.0.0.1"  # the operator allows the local fake provider
            data = setup_data(env, runs=1)["report"]
            spec = json.dumps({k: v for k, v in llm.secrets().items() if k.startswith("OPENAI")})
            subprocess.run([PY, "-c", SECRETS, spec], cwd=ROOT, env=env, check=True)
            subprocess.run([PY, "-c", _JUDGE_POLICY, json.dumps(JUDGE)], cwd=ROOT, env=env, check=True)
            with psycopg.connect(database_url) as conn:
                tenant = conn.execute("SELECT id FROM tenants_tenant WHERE slug = 'bench'").fetchone()[0]
                before = decisions_stored(conn, tenant)  # the setup's own run
            env["CELERY_BROKER_URL"] = BROKER
            workers = start_workers(env, args.celery_workers)
            half = max(1, args.workers // 2)
            layouts = {"one": [args.workers], "two": [half, args.workers - half]}
            for n in range(args.rounds):
                for name in ("one", "two"):
                    ports = [free_port() for _ in layouts[name]]
                    servers = [
                        start_server(env, port, count, args.server_threads)
                        for port, count in zip(ports, layouts[name], strict=True)
                    ]
                    if n == 0 and name == "one":
                        warm = drive(ports, data["key"], 3, args.clients)  # imports, connections, caches
                        _add(totals, warm)
                    result = drive(ports, data["key"], args.seconds, args.clients)
                    _add(totals, result)
                    rounds[name].append(result["requests"] / result["elapsed"])
                    for server in servers:
                        stop_server(server)
                    servers = []
            verdict = check(database_url, "bench", totals, wait=120, decisions_before=before)
            llm_calls = llm.request_count
        finally:
            for server in servers:
                stop_server(server)
            for worker in workers:
                stop_server(worker)
            _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')

    one, two = (sum(rounds[k]) / len(rounds[k]) for k in ("one", "two"))
    print(
        f"one PostgreSQL, {args.celery_workers} Celery workers (Redis), {len(POLICIES)} grounding policies + an "
        f"after_workflow LLM judge (fake provider); {args.clients} agents "
        f"(start, {REPORTS_PER_RUN} reports, complete); "
        f"{os.cpu_count()} cores shared by everything"
    )
    print(
        f"one instance  x{args.workers} workers: "
        + ", ".join(f"{r:.0f}" for r in rounds["one"])
        + f" req/s  (mean {one:.0f})"
    )
    print(
        f"two instances x{args.workers // 2}+{args.workers - args.workers // 2}: "
        + ", ".join(f"{r:.0f}" for r in rounds["two"])
        + f" req/s  (mean {two:.0f})"
    )
    completed = len(totals["completed"])
    print(
        f"requests {totals['requests']}, errors {len(totals['errors'])}; decisions returned {totals['decisions']}, "
        f"stored {verdict['decisions_stored']}; reports answered {totals['reports']}, stored "
        f"{verdict['reports_stored']}"
    )
    print(
        f"completed runs {completed}; judged runs {verdict['judged_runs']}, judgements {verdict['judgements']}, "
        f"runs judged twice {verdict['judged_twice']}; provider calls {llm_calls}"
    )
    ok = (
        verdict["decisions_stored"] == totals["decisions"]
        and verdict["reports_stored"] == totals["reports"]
        and verdict["judged_runs"] == completed
        and verdict["judgements"] == completed
        and verdict["judged_twice"] == 0
        and not totals["errors"]
    )
    print("consistency:", "ok" if ok else "FAILED")
    print(f"total wall time {time.monotonic() - started:.1f} s")
    print(f"ratio={two / one:.2f}")
    sys.exit(0 if ok else 1)


def _add(totals: dict, result: dict) -> None:
    for name in ("requests", "decisions", "reports"):
        totals[name] += result[name]
    totals["completed"].extend(result["completed"])
    totals["errors"].extend(result["errors"])


_JUDGE_POLICY = """
import json, sys
import django
django.setup()
from django_scopes import scope
from tenants.audit import Actor
from policies import services as policy_services
from tenants.models import Tenant

name, rules, agents = json.loads(sys.argv[1])
tenant = Tenant.objects.get(slug="bench")
with scope(tenant=tenant):
    policy_services.policy_create(tenant=tenant, actor=Actor.system("bench"), name=name, category="grounding",
                                  rules=rules, scope={"agents": agents})
"""


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--load":
        load_main(json.loads(sys.argv[2]))
    else:
        main()
