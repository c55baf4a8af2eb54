"""Benchmark the report endpoint of a production-like server under load on loopback.

    .venv/bin/python bench/report.py [--requests 4000] [--threads 8] [--workers 4] [--db-options ...]
                                     [--no-inflation-scenario]

Creates a fresh PostgreSQL database (``groundrule_bench``, dropped at the end), migrates it, makes
a tenant, an API key, five grounding policies that match the agent and a pool of running runs,
then starts gunicorn (DEBUG off) on a free port of 127.0.0.1. A separate load process with a few
keep-alive connections drives, in alternating rounds within the same server run:

- ``POST /api/v1/runs/{id}/grounding/`` rotating over the runs (the hot path: auth, validation,
  row lock, report, engine over 5 policies, decision and evaluations in one transaction), and
- ``GET /api/v1/ping/``, the smallest authenticated JSON endpoint (auth + one tiny response),

- the same report for a second tenant whose first policy also sets ``max_score_inflation`` (the
  score audit's rule, docs/score-audit.md), with seven days of per-agent audit sums seeded below
  the limit: the hot path then reads the agent's 7-day inflation and every report still passes
  (``--no-inflation-scenario`` leaves it out),

(both tenants with ``score_audit_rate`` 0: without a broker the audit task would run eagerly inside
the request, which a deployment with a Celery worker never does; ``API_RATE_LIMIT`` is set so high
that the limiter counts but never refuses),

and prints requests/s, p50 and p99 of each, then ``ratio_inflation_rule=<that report rps / ping
rps>``. The last line is ``ratio=<report rps / ping rps>`` (without the rule); the target is at
least 0.5. The database is DATABASE_URL's when it names a PostgreSQL database
(it is dropped and created afresh, and dropped at the end), else BENCH_PG (default
postgres://postgres@127.0.0.1:5432) and BENCH_DB (default groundrule_bench).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def _postgres() -> tuple[str, str]:
    """(server URL, database name): DATABASE_URL's when it is PostgreSQL, else BENCH_PG/BENCH_DB."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        server, _, name = url.split("?")[0].rpartition("/")
        if name:
            return server, name
    return os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432").rstrip("/"), os.environ.get(
        "BENCH_DB", "groundrule_bench"
    )


PG, DB_NAME = _postgres()
AGENT = "research-agent"
TIME_BUDGET = 50.0  # seconds of load at most, whatever --requests says

POLICIES = [
    (
        "Strict Research Grounding",
        {
            "require_source_grounding": True,
            "min_grounding_score": 0.8,
            "min_citations": 2,
            "max_unsupported_claims": 0,
            "abstention_threshold": 0.5,
            "action_on_violation": "block",
            "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
        },
        ["research-agent"],
    ),
    (
        "RAG pipeline",
        {"min_grounding_score": 0.7, "score_relevance_floor": 0.5, "min_citations": 1, "action_on_violation": "block"},
        ["research-*"],
    ),
    ("Lenient average", {"min_grounding_score": 0.7, "score_relevance_floor": 0.4, "score_eval_mode": "average"}, []),
    ("Top three", {"min_grounding_score": 0.6, "score_eval_mode": "top_n", "score_top_n": 3}, ["*-agent"]),
    (
        "Lenient RAG",
        {"min_grounding_score": 0.6, "min_citations": 1, "max_unsupported_claims": 3, "action_on_violation": "warn"},
        ["research-agent", "qa-agent"],
    ),
]

# The second scenario's policies: the first one also checks the agent's score inflation.
INFLATION_POLICIES = [
    (POLICIES[0][0], {**POLICIES[0][1], "max_score_inflation": 0.3, "score_audit_min_samples": 20}, POLICIES[0][2]),
    *POLICIES[1:],
]
# Seeded per-day audit sums: 30 audited reports a day, reported 0.9 and measured 0.8 (inflation 0.1).
AUDIT_DAY = {"audited": 30, "reported": 0.9, "measured": 0.8}

# What an agent reports after one retrieval-and-answer step; every policy passes it, so each
# call writes a full decision with five evaluations.
REPORT = {
    "grounding_scores": [0.92, 0.87, 0.81],
    "citations": ["Federal Reserve Report 2024", "IMF World Economic Outlook"],
    "unsupported_claims": [],
    "output_confidence": 0.88,
}


# --- Database and server -------------------------------------------------------------------


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def create_database() -> str:
    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{DB_NAME}"')
    return f"{PG}/{DB_NAME}"


def drop_database() -> None:
    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


def server_env(database_url: str) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": database_url,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LOG_LEVEL": "WARNING",
            "SECRET_KEY": "bench-secret-key-not-for-production-0123456789abcdef",
            # With DEBUG off the settings refuse the public development keys.
            "GOVERNANCE_SECRETS_KEY": "bench-secrets-key-not-for-production-0123456789abcdef",
            "PYTHONPATH": str(ROOT),
            "PYTHONWARNINGS": "ignore",  # whitenoise's "no staticfiles directory" on every worker start
            # The per-key limiter still counts every request (its cost is measured) but never refuses:
            # the default 1,200/min would answer most of the load with 429s.
            "API_RATE_LIMIT": "100000000/min",
        }
    )
    env.pop("CELERY_BROKER_URL", None)
    return env


SETUP = """
import json, sys
from datetime import timedelta
import django
django.setup()
from django.utils import timezone
from django_scopes import scope
from tenants.audit import Actor
from governance import services as run_services
from governance.models import AgentScoreAuditDay
from policies import services as policy_services
from tenants import services as tenant_services

spec = json.loads(sys.argv[1])
actor = Actor.system("bench")
out = {}
for scenario in spec["scenarios"]:
    tenant = tenant_services.tenant_create(slug=scenario["slug"], name=scenario["slug"], actor=actor)
    # No score-audit sampling: without a broker the audit task would run eagerly inside the request,
    # which production (a Celery worker) never does; the sampling draw itself still runs.
    tenant.score_audit_rate = 0.0
    tenant.save(update_fields=["score_audit_rate"])
    key, raw = tenant_services.api_key_create(tenant=tenant, name="bench", actor=actor)
    with scope(tenant=tenant):
        for name, rules, agents in scenario["policies"]:
            policy_services.policy_create(tenant=tenant, actor=actor, name=name, category="grounding",
                                          rules=rules, scope={"agents": agents})
        day = spec["audit_day"]
        if scenario["seed_audits"]:
            n, x, y = day["audited"], day["reported"], day["measured"]
            for back in range(7):
                AgentScoreAuditDay.objects.create(
                    tenant=tenant, agent_name=spec["agent"], date=timezone.now().date() - timedelta(days=back),
                    audited=n, sum_reported=n * x, sum_measured=n * y, sum_reported_sq=n * x * x,
                    sum_measured_sq=n * y * y, sum_products=n * x * y)
        tenant.refresh_from_db()
        runs = [run_services.run_start(tenant=tenant, api_key=key, agent_name=spec["agent"])[0].pk
                for _ in range(spec["runs"])]
    out[scenario["kind"]] = {"key": raw, "runs": runs}
print(json.dumps(out))
"""


def setup_data(env: dict, runs: int, inflation: bool = False) -> dict:
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    scenarios = [{"kind": "report", "slug": "bench", "policies": POLICIES, "seed_audits": False}]
    if inflation:
        scenarios.append(
            {"kind": "report_rule", "slug": "bench-inflation", "policies": INFLATION_POLICIES, "seed_audits": True}
        )
    spec = json.dumps({"scenarios": scenarios, "agent": AGENT, "runs": runs, "audit_day": AUDIT_DAY})
    out = subprocess.run([PY, "-c", SETUP, spec], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict, port: int, workers: int, threads: int) -> subprocess.Popen:
    gunicorn = str(Path(PY).with_name("gunicorn"))
    cmd = [
        gunicorn,
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--keep-alive",
        "30",
        "--log-level",
        "warning",
        "--preload",
    ]
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("gunicorn exited during startup")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return server
        except OSError:
            time.sleep(0.2)
    stop_server(server)
    raise SystemExit("gunicorn did not become healthy in 30 s")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


# --- The load process ----------------------------------------------------------------------


def drive(port: int, key: str, runs: list[int], kind: str, total: int, threads: int, seconds: float) -> dict:
    # kind: "ping", or a report scenario ("report", "report_rule"): each is a POST of REPORT
    """Send `total` requests of one kind over `threads` keep-alive connections; latencies in ms."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", "Connection": "keep-alive"}
    body = json.dumps(REPORT).encode()
    counter = iter(range(total))
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine = []
        while time.monotonic() < deadline:
            with lock:
                n = next(counter, None)
            if n is None:
                break
            if kind != "ping":
                method, path, payload = "POST", f"/api/v1/runs/{runs[n % len(runs)]}/grounding/", body
            else:
                method, path, payload = "GET", "/api/v1/ping/", None
            started = time.perf_counter()
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                errors.append(type(exc).__name__)
                continue
            mine.append((time.perf_counter() - started) * 1000)
            if response.status != 200:
                errors.append(str(response.status))
        conn.close()
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    started = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - started
    return {"kind": kind, "latencies": latencies, "elapsed": elapsed, "errors": errors}


def load_main(argv: list[str]) -> None:
    """Entry point of the load process: rounds alternating ping and each report scenario, as JSON."""
    cfg = json.loads(argv[0])
    kinds = ["ping", *cfg["scenarios"]]
    budget = TIME_BUDGET / (len(kinds) * cfg["rounds"])

    def who(kind: str) -> tuple[str, list[int]]:
        scenario = cfg["scenarios"].get(kind) or cfg["scenarios"]["report"]
        return scenario["key"], scenario["runs"]

    results: dict[str, list] = {kind: [] for kind in kinds}
    for kind in kinds:
        drive(cfg["port"], *who(kind), kind, cfg["warmup"], cfg["threads"], 10)
    per_round = max(1, cfg["requests"] // cfg["rounds"])
    for _ in range(cfg["rounds"]):
        for kind in kinds:
            results[kind].append(drive(cfg["port"], *who(kind), kind, per_round, cfg["threads"], budget))
    print(json.dumps(results))


def summarise(rounds: list[dict]) -> dict:
    latencies = sorted(x for r in rounds for x in r["latencies"])
    elapsed = sum(r["elapsed"] for r in rounds)
    errors = [e for r in rounds for e in r["errors"]]
    n = len(latencies)
    return {
        "requests": n,
        "errors": len(errors),
        "rps": n / elapsed if elapsed else 0.0,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": latencies[min(n - 1, int(n * 0.99))] if latencies else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=4000, help="measured requests per endpoint")
    parser.add_argument("--threads", type=int, default=8, help="client connections")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--server-threads", type=int, default=2, help="threads per gunicorn worker")
    parser.add_argument("--rounds", type=int, default=4, help="alternating ping/report rounds")
    parser.add_argument("--runs", type=int, default=200, help="runs the report requests rotate over")
    parser.add_argument(
        "--no-inflation-scenario",
        action="store_true",
        help="leave out the second tenant whose policy sets max_score_inflation",
    )
    parser.add_argument(
        "--db-options",
        default="",
        help="query string for the server's DATABASE_URL, e.g. 'server_side_binding=true&prepare_threshold=5'",
    )
    args = parser.parse_args()

    started = time.monotonic()
    database_url = create_database()
    server = None
    try:
        env = server_env(database_url)
        data = setup_data(env, args.runs, not args.no_inflation_scenario)
        if args.db_options:
            env["DATABASE_URL"] = f"{database_url}?{args.db_options}"
        port = free_port()
        server = start_server(env, port, args.workers, args.server_threads)
        cfg = {
            "port": port,
            "scenarios": data,
            "requests": args.requests,
            "threads": args.threads,
            "rounds": args.rounds,
            "warmup": 300,
        }
        load = subprocess.run([PY, __file__, "--load", json.dumps(cfg)], capture_output=True, text=True, check=True)
        results = json.loads(load.stdout)
    finally:
        if server is not None:
            stop_server(server)
        drop_database()

    ping, report = summarise(results["ping"]), summarise(results["report"])
    rule = summarise(results["report_rule"]) if "report_rule" in results else None
    print(
        f"server: gunicorn gthread, {args.workers} workers x {args.server_threads} threads, DEBUG off, "
        f"PostgreSQL; client: {args.threads} keep-alive connections in a separate process; "
        f"{len(POLICIES)} matching grounding policies; {args.rounds} alternating rounds"
        + (f"; database options {args.db_options}" if args.db_options else "")
    )
    rows = [("GET  /api/v1/ping/", ping), ("POST /api/v1/runs/{id}/grounding/", report)]
    if rule is not None:
        rows.append(("  same, + max_score_inflation rule", rule))
    for name, s in rows:
        print(
            f"{name:<36} {s['requests']:>6} requests  {s['rps']:8.1f} req/s  p50 {s['p50']:6.2f} ms  "
            f"p99 {s['p99']:6.2f} ms  errors {s['errors']}"
        )
    print(f"total wall time {time.monotonic() - started:.1f} s")
    if ping["errors"] or report["errors"] or (rule is not None and rule["errors"]):
        print("WARNING: some requests failed; the figures are not comparable", file=sys.stderr)
    if rule is not None:
        print(f"ratio_inflation_rule={rule['rps'] / ping['rps'] if ping['rps'] else 0.0:.2f}")
    ratio = report["rps"] / ping["rps"] if ping["rps"] else 0.0
    print(f"ratio={ratio:.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--load":
        load_main(sys.argv[2:])
    else:
        main()
