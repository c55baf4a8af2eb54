"""Load held, nothing lost: a production-like topology under a mixed load of concurrent clients.

    .venv/bin/python bench/load.py [--clients 32] [--seconds 20] [--workers 4] [--server-threads 4]

Creates a fresh PostgreSQL database (``groundrule_load``, dropped at the end), migrates it, makes a
tenant with five grounding policies and one local-verifier policy (its after_workflow check runs
inline, in the complete), and starts gunicorn (DEBUG off; by default the image's 4 workers x 4
threads, Dockerfile) and a Celery worker on Redis (``LOAD_BROKER``, default
redis://127.0.0.1:6379/7) for what is queued (the score audits sampled from one report in ten), all
on loopback. Then:

1. **Peak**: ``--clients`` closed-loop clients send a mix for ``--seconds``: run starts, grounding reports
   into shared runs and into each client's own run, completes, on-demand grounding checks, run reads over
   the API and the dashboard's runs page (a signed-in session). Each check and complete verifies a
   claim no earlier request sent (``fresh_claim``), so the verifier's embedding cache saves only the
   sources' share, as it would in use. The baseline, measured in the same run,
   is ``GET /api/v1/ping/`` alone.
2. **Half the peak**: the same mix paced at half the peak rate, for p99 at a load the server can hold.
3. **Concurrent completes**: eight clients complete each of five runs at once: one 200 each, the rest 409.
4. **Nothing lost**: once Celery's queue is empty, per run, the decisions stored equal the decisions
   answered, and no queued judgement was written twice.

Prints throughput, p50/p99 per operation and overall, the count of 5xx, lost and duplicated rows, and
``ratio=<mixed rps / ping rps>``. Targets: zero 5xx, zero lost or duplicated rows, p99 < 50 ms at half
the peak rate.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import (
    PG,
    POLICIES,
    PY,
    REPORT,
    ROOT,
    free_port,
    server_env,
    start_server,
    stop_server,
)

DB_NAME = os.environ.get("LOAD_DB", "groundrule_load")
BROKER = os.environ.get("LOAD_BROKER", "redis://127.0.0.1:6379/7")
AGENT = "research-agent"
TARGET_P99_MS = 50.0  # at half the peak rate (issue 14)
SHARED_RUNS = 8
SOURCES = [
    {"id": "fed-2023", "text": "In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points."},
    {"id": "imf-2023", "text": "The IMF projected global growth of 2.8 percent for 2023."},
]
OUTPUT = "The Federal Reserve raised its benchmark rate by 25 basis points in March 2023."
# What checks and completes verify: a text no earlier request sent, so that the verifier's embedding
# cache (judges/verifier/embedder.py) helps only where it would in use, with the sources that every
# report of a run repeats, never with the claim itself.
CLAIMS = [
    "The Federal Reserve raised rates by {n} basis points in March 2023.",
    "The IMF projected global growth of {n} percent for 2023.",
    "In March 2023 the Federal Reserve cut its benchmark rate by {n} basis points.",
]


def fresh_claim(rng: random.Random) -> str:
    return rng.choice(CLAIMS).format(n=f"{rng.randint(1, 999)}.{rng.randint(0, 9999):04d}")


# Weights of the mix: what a fleet of agents and a few reviewers do.
MIX = [
    ("start", 10),
    ("report_shared", 25),
    ("report_own", 25),
    ("complete", 10),
    ("check", 10),
    ("run_read", 10),
    ("page", 10),
]
VERIFIER_POLICY = (
    "Local verifier",
    {"nli_check": True, "nli_phase": "after_workflow", "unverifiable_action": "warn", "contradiction_action": "warn"},
    [],
)

SETUP = """
import json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from django_scopes import scope
from tenants.audit import Actor
from tenants.models import Role
from governance import services as run_services
from policies import services as policy_services
from tenants import services as tenant_services

spec = json.loads(sys.argv[1])
actor = Actor.system("bench")
tenant = tenant_services.tenant_create(slug="load", name="Load", actor=actor)
_, raw = tenant_services.api_key_create(tenant=tenant, name="load", actor=actor, scope="admin")
user = get_user_model().objects.create_user(username="reviewer", password="load-bench-password")
tenant_services.membership_set(tenant=tenant, user=user, role=Role.REVIEWER, actor=actor)
with scope(tenant=tenant):
    for name, rules, agents in spec["policies"]:
        policy_services.policy_create(tenant=tenant, actor=actor, name=name, category="grounding",
                                      rules=rules, scope={"agents": agents})
    tenant.refresh_from_db()
    runs = [run_services.run_start(tenant=tenant, agent_name=spec["agent"])[0].pk for _ in range(spec["runs"])]
print(json.dumps({"key": raw, "runs": runs}))
"""

COUNT = """
import json
import django
django.setup()
from django.db.models import Count
from django_scopes import scopes_disabled
from governance.models import Decision, Evaluation
with scopes_disabled():
    decisions = dict(Decision.objects.values_list("run_id").annotate(n=Count("id")))
    late = Evaluation.objects.exclude(source="engine").values("decision_id", "policy_ref", "source")
    dupes = late.annotate(n=Count("id")).filter(n__gt=1).count()
    total_late = late.count()
print(json.dumps({"decisions": {str(k): v for k, v in decisions.items()}, "duplicated_judgements": dupes,
                  "late_evaluations": total_late}))
"""


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


# Every 5xx and dropped connection, as (method, path, status, the start of the body): the server's
# log names the same request id (a 5xx body on /api/ is {"detail", "request_id"}).
FAILURES: list[tuple[str, str, int, str]] = []


class Client:
    """One keep-alive connection, as one agent or one reviewer's browser."""

    def __init__(self, port: int, key: str, session: str = ""):
        self.port, self.key, self.session = port, key, session
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body=None, parse: bool = False) -> tuple[int, dict | None, float]:
        """(status, the JSON body when ``parse``, ms). Bodies are parsed only where the mix needs one:
        a long run's detail is a megabyte, and parsing it in the clients' process would slow the
        other clients' timings on these two cores."""
        headers = {"Connection": "keep-alive"}
        if path.startswith("/api/"):
            headers["Authorization"] = f"Bearer {self.key}"
        if self.session:
            headers["Cookie"] = f"sessionid={self.session}"
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            self.conn.request(method, path, body=payload, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            FAILURES.append((method, path, 0, "connection dropped"))
            return 0, None, (time.perf_counter() - started) * 1000
        elapsed = (time.perf_counter() - started) * 1000
        if response.status >= 500:
            FAILURES.append((method, path, response.status, raw[:300].decode(errors="replace")))
        data = None
        if parse and response.getheader("Content-Type", "").startswith("application/json"):
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
        return response.status, data, elapsed


def sign_in(port: int) -> str:
    """A reviewer's session, through the real sign-in form (CSRF token included)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/accounts/login/")
    response = conn.getresponse()
    page = response.read().decode()
    csrf_cookie = response.getheader("Set-Cookie").split("csrftoken=")[1].split(";")[0]
    token = page.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token, "username": "reviewer", "password": "load-bench-password"}
    )
    conn.request(
        "POST",
        "/accounts/login/",
        body=body,
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf_cookie}",
            "Referer": f"http://127.0.0.1:{port}/accounts/login/",
        },
    )
    response = conn.getresponse()
    response.read()
    cookies = " ".join(h for k, h in response.getheaders() if k.lower() == "set-cookie")
    if "sessionid=" not in cookies:
        raise SystemExit(f"sign-in failed ({response.status})")
    return cookies.split("sessionid=")[1].split(";")[0]


class Ledger:
    """What the clients were answered: per run, how many decisions; per operation, latencies."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.statuses: Counter = Counter()
        self.decisions: Counter = Counter()

    def record(self, op: str, status: int, ms: float, run_id: int | None = None) -> None:
        with self.lock:
            self.latencies[op].append(ms)
            self.statuses[(op, status)] += 1
            if run_id is not None:
                self.decisions[run_id] += 1


def run_mix(
    port: int,
    key: str,
    session: str,
    shared: list[int],
    ledger: Ledger,
    clients: int,
    seconds: float,
    rate: float | None = None,
) -> float:
    """The mixed load; closed-loop, or paced to `rate` requests/s in all when given. Returns elapsed s."""
    ops = [op for op, weight in MIX for _ in range(weight)]
    deadline = time.monotonic() + seconds
    interval = clients / rate if rate else 0.0

    def one(client: Client, rng: random.Random, own: dict) -> None:
        op = rng.choice(ops)
        if op == "start" or (op in ("report_own", "complete") and own.get("run") is None):
            status, data, ms = client.call("POST", "/api/v1/runs/", {"agent_name": AGENT}, parse=True)
            run_id = (data or {}).get("run_id") or (data or {}).get("id")
            ledger.record("start", status, ms, run_id if status == 201 else None)
            if status == 201:
                own["run"] = run_id
        elif op in ("report_shared", "report_own"):
            run_id = rng.choice(shared) if op == "report_shared" else own["run"]
            body = {**REPORT, "output": OUTPUT, "sources": SOURCES, "citations": ["fed-2023", "imf-2023"]}
            status, _, ms = client.call("POST", f"/api/v1/runs/{run_id}/grounding/", body)
            ledger.record(op, status, ms, run_id if status == 200 else None)
        elif op == "complete":
            body = {"output": fresh_claim(rng)}
            status, _, ms = client.call("POST", f"/api/v1/runs/{own['run']}/complete/", body)
            ledger.record("complete", status, ms, own["run"] if status == 200 else None)
            own["run"] = None
        elif op == "check":
            body = {"text": fresh_claim(rng), "sources": SOURCES}
            status, _, ms = client.call("POST", "/api/v1/grounding/check/", body)
            ledger.record("check", status, ms)
        elif op == "run_read":
            # A run read as a client now reads one: the bounded summary, or a page of one of its lists
            # (the shared runs hold hundreds of reports and evaluations by the end).
            path = rng.choice(("", "reports/?page_size=100", "evaluations/?page_size=100", "spans/"))
            status, _, ms = client.call("GET", f"/api/v1/runs/{rng.choice(shared)}/{path}")
            ledger.record("run_read", status, ms)
        else:
            status, _, ms = client.call("GET", "/runs/")
            ledger.record("page", status, ms)

    def worker(n: int) -> None:
        client, rng, own = Client(port, key, session), random.Random(n), {"run": None}
        next_at = time.monotonic() + rng.random() * interval
        while time.monotonic() < deadline:
            if interval:
                pause = next_at - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                next_at += interval
            one(client, rng, own)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - started


def ping_baseline(port: int, key: str, clients: int, seconds: float) -> float:
    done = Counter()
    deadline = time.monotonic() + seconds

    def worker() -> None:
        client = Client(port, key)
        while time.monotonic() < deadline:
            status, _, _ = client.call("GET", "/api/v1/ping/")
            done[status] += 1

    started = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(clients)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return done[200] / (time.perf_counter() - started)


def concurrent_completes(port: int, key: str, ledger: Ledger, runs: int = 5, callers: int = 8) -> list[Counter]:
    outcomes = []
    for _ in range(runs):
        status, data, _ = Client(port, key).call("POST", "/api/v1/runs/", {"agent_name": AGENT}, parse=True)
        run_id = (data or {}).get("run_id") or (data or {}).get("id")
        ledger.decisions[run_id] += 1
        answers: Counter = Counter()
        barrier = threading.Barrier(callers)

        def complete(run_id=run_id, answers=answers, barrier=barrier) -> None:
            client = Client(port, key)
            barrier.wait()
            status, _, _ = client.call("POST", f"/api/v1/runs/{run_id}/complete/", {"output": OUTPUT})
            answers[status] += 1
            if status == 200:
                with ledger.lock:
                    ledger.decisions[run_id] += 1

        pool = [threading.Thread(target=complete) for _ in range(callers)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        outcomes.append(answers)
    return outcomes


def queue_length() -> int:
    import redis

    return redis.Redis.from_url(BROKER).llen("celery")


def summary(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    if not ordered:
        return float("nan"), float("nan")
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0, help="of each load phase")
    # The image's web topology (Dockerfile: WEB_CONCURRENCY=4, gthread with 4 threads).
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--server-threads", type=int, default=4, help="threads per gunicorn worker")
    args = parser.parse_args()

    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{DB_NAME}"')
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    env = {**server_env(f"{PG}/{DB_NAME}"), "CELERY_BROKER_URL": BROKER, "LOG_LEVEL": "ERROR"}
    server = worker = None
    try:
        subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        spec = json.dumps({"policies": [*POLICIES, VERIFIER_POLICY], "agent": AGENT, "runs": SHARED_RUNS})
        out = subprocess.run([PY, "-c", SETUP, spec], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        setup = json.loads(out.stdout.strip().splitlines()[-1])
        key, shared = setup["key"], setup["runs"]
        port = free_port()
        server = start_server(env, port, args.workers, args.server_threads)
        worker = subprocess.Popen(
            [
                PY,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--concurrency",
                "1",
                "--loglevel",
                "warning",
                "--without-heartbeat",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        session = sign_in(port)
        ledger = Ledger()
        for run_id in shared:
            ledger.decisions[run_id] += 1  # their before_workflow decision, made by the setup

        warm = Ledger()
        warm.decisions = ledger.decisions  # every phase answers into one account of decisions
        run_mix(port, key, session, shared, warm, args.clients, 3.0)  # loads the verifier in every worker
        ping_rps = ping_baseline(port, key, args.clients, min(5.0, args.seconds))
        elapsed = run_mix(port, key, session, shared, ledger, args.clients, args.seconds)
        peak_requests = sum(len(v) for v in ledger.latencies.values())
        peak_rps = peak_requests / elapsed
        peak_latencies = [x for v in ledger.latencies.values() for x in v]
        half = Ledger()
        half.decisions = ledger.decisions
        run_mix(port, key, session, shared, half, args.clients, args.seconds, rate=peak_rps / 2)
        completes = concurrent_completes(port, key, ledger)

        deadline = time.monotonic() + 120
        while queue_length() and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2)  # the last task in flight
        out = subprocess.run([PY, "-c", COUNT], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        stored = json.loads(out.stdout.strip().splitlines()[-1])

        statuses: Counter = Counter()
        for phase in (warm, ledger, half):
            for (_, status), n in phase.statuses.items():
                statuses[status] += n
        five_xx = sum(n for status, n in statuses.items() if status >= 500 or status == 0)
        answered = {str(k): v for k, v in ledger.decisions.items() if k is not None}
        lost = sum(max(0, answered.get(r, 0) - stored["decisions"].get(r, 0)) for r in answered)
        extra = sum(max(0, n - answered.get(r, 0)) for r, n in stored["decisions"].items())

        print(
            f"topology: gunicorn {args.workers}x{args.server_threads} + 1 Celery worker + PostgreSQL + Redis, "
            f"{args.clients} clients, {args.seconds:.0f} s a phase"
        )
        # "> 50": the half phase's calls over the target, by operation: what the overall p99 is made of.
        print(
            f"{'operation':<14}{'peak n':>8}{'p50 ms':>9}{'p99 ms':>9}{'half n':>8}{'p50 ms':>9}{'p99 ms':>9}"
            f"{'> 50':>6}"
        )
        for op, _ in MIX:
            p50, p99 = summary(ledger.latencies[op])
            h50, h99 = summary(half.latencies[op])
            slow = sum(1 for ms in half.latencies[op] if ms > TARGET_P99_MS)
            print(
                f"{op:<14}{len(ledger.latencies[op]):>8}{p50:>9.1f}{p99:>9.1f}"
                f"{len(half.latencies[op]):>8}{h50:>9.1f}{h99:>9.1f}{slow:>6}"
            )
        p50, p99 = summary(peak_latencies)
        h50, h99 = summary([x for v in half.latencies.values() for x in v])
        print(f"peak: {peak_rps:.0f} req/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms")
        print(
            f"half the peak ({peak_rps / 2:.0f} req/s): p50 {h50:.1f} ms, p99 {h99:.1f} ms "
            f"(target < {TARGET_P99_MS:.0f} ms)"
        )
        print(f"statuses: {dict(sorted(statuses.items()))}")
        print(f"5xx or dropped: {five_xx} (target 0)")
        for method, path, status, body in FAILURES[:10]:
            print(f"  {status} {method} {path}: {body}")
        print(
            f"runs: {len(answered)}; decisions answered {sum(answered.values())}, stored "
            f"{sum(stored['decisions'].values())}; lost {lost}, unexpected {extra} (target 0, 0)"
        )
        print(
            f"queued judgements stored: {stored['late_evaluations']}, written twice: "
            f"{stored['duplicated_judgements']} (target 0)"
        )
        print(
            "concurrent completes (8 callers x 5 runs): " + ", ".join(f"{c[200]}x200/{c[409]}x409" for c in completes)
        )
        print(f"ping baseline: {ping_rps:.0f} req/s")
        print(f"ratio={peak_rps / ping_rps:.2f}")
        ok = five_xx == 0 and lost == 0 and extra == 0 and stored["duplicated_judgements"] == 0
        ok = ok and all(c[200] == 1 and c[409] == 7 for c in completes)
        sys.exit(0 if ok else 1)
    finally:
        for proc in (worker, server):
            if proc is not None:
                stop_server(proc)
        _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


if __name__ == "__main__":
    main()
