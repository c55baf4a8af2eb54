"""Benchmark the evaluation exports against PostgreSQL's own COPY, on one million rows.

    .venv/bin/python bench/export.py [--rows 1000000] [--keep]

Creates a fresh PostgreSQL database (BENCH_EXPORT_DB, default ``groundrule_sc``; dropped at the end
unless --keep), migrates it, makes a tenant, an API key and five runs, and seeds ``--rows``
evaluations with one ``INSERT … SELECT … FROM generate_series`` (seconds, not minutes). Then, in
the same run against the same rows:

- ``COPY (SELECT * FROM governance_evaluation WHERE tenant_id = … ORDER BY id) TO STDOUT (FORMAT csv)``
  read by psycopg in this process: the database-speed baseline (best of two);
- ``GET /api/v1/evaluations/export?format=csv`` and ``?format=jsonl`` from gunicorn (one worker,
  DEBUG off) over loopback, read in this process.

It prints rows/s and MB/s of each, the ratio of each export to COPY (target >= 0.3), the time to
the first byte of each export (target < 1 s) and the growth of the gunicorn worker's peak RSS
(VmHWM, reset before each export) over its RSS before (target < 50 MB). Each export is checked to
hold every row. PostgreSQL comes from BENCH_PG (default postgres://postgres@127.0.0.1:5432).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from report import (
    PG,
    PY,
    ROOT,
    _admin,
    free_port,
    server_env,
    start_server,
    stop_server,
)

DB_NAME = os.environ.get("BENCH_EXPORT_DB", "groundrule_sc")

SETUP = """
import json
import django
django.setup()
from django_scopes import scope
from tenants.audit import Actor
from governance import services as run_services
from tenants import services as tenant_services

actor = Actor.system("bench")
tenant = tenant_services.tenant_create(slug="bench", name="Bench", actor=actor)
_, raw = tenant_services.api_key_create(tenant=tenant, name="bench", actor=actor, scope="read")
with scope(tenant=tenant):
    runs = [run_services.run_start(tenant=tenant, agent_name=f"agent-{n}")[0].pk for n in range(5)]
print(json.dumps({"key": raw, "tenant": tenant.pk, "runs": runs}))
"""

# Rows like the engine writes: text with commas and quotes a CSV writer has to escape, JSON metadata.
SEED = """
INSERT INTO governance_evaluation
    (tenant_id, run_id, decision_id, policy_id, policy_ref, policy_name, policy_version, category, agent_name,
     phase, action, reason, metadata, source, created_at, review_state, reviewed_by_id, reviewed_at, review_comment,
     shadow)
SELECT %(tenant)s, (%(runs)s::bigint[])[1 + g %% 5], NULL, NULL, 100 + g %% 7, 'Policy, "' || (g %% 7) || '"',
       1 + g %% 3, 'grounding', 'agent-' || (g %% 5),
       (ARRAY['before_workflow', 'mid_execution', 'after_workflow'])[1 + g %% 3],
       (ARRAY['allow', 'warn', 'block'])[1 + g %% 3],
       'Grounding score (0.' || lpad((g %% 100)::text, 2, '0') || ') below threshold (0.7)',
       jsonb_build_object('score', (g %% 100) / 100.0, 'threshold', 0.7, 'warnings', jsonb_build_array('w' || g)),
       'engine', now() - interval '30 days' + g * interval '1 millisecond' + (g %% 997) * interval '1 microsecond',
       'pending', NULL, NULL, CASE WHEN g %% 5 = 0 THEN 'Checked, row ' || g ELSE '' END, false
FROM generate_series(1, %(rows)s) AS g
"""


def create_database() -> str:
    _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{DB_NAME}"')
    return f"{PG}/{DB_NAME}"


def seed(env: dict, database_url: str, rows: int) -> dict:
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    out = subprocess.run([PY, "-c", SETUP], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    started = time.perf_counter()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(SEED, {"tenant": data["tenant"], "runs": data["runs"], "rows": rows})
        conn.execute("VACUUM ANALYZE governance_evaluation")
    data["seed_seconds"] = time.perf_counter() - started
    return data


def copy_baseline(database_url: str, tenant: int) -> dict:
    sql = (
        f"COPY (SELECT * FROM governance_evaluation WHERE tenant_id = {int(tenant)} ORDER BY id) TO STDOUT (FORMAT csv)"
    )
    with psycopg.connect(database_url) as conn, conn.cursor() as cursor:
        started = time.perf_counter()
        size = lines = 0
        with cursor.copy(sql) as copy:
            for block in copy:
                size += len(block)
                lines += 1  # libpq hands COPY over one row per block
        return {"seconds": time.perf_counter() - started, "bytes": size, "rows": lines}


def _worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    if len(children) != 1:
        raise SystemExit(f"expected one gunicorn worker, found {children}")
    return int(children[0])


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def export(port: int, key: str, query: str, worker: int) -> dict:
    Path(f"/proc/{worker}/clear_refs").write_text("5")  # peak RSS (VmHWM) := current RSS
    rss_before = _status_kb(worker, "VmRSS")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    conn.request("GET", f"/api/v1/evaluations/export?{query}", headers={"Authorization": f"Bearer {key}"})
    response = conn.getresponse()
    if response.status != 200:
        raise SystemExit(f"export answered {response.status}: {response.read()[:300]!r}")
    first = response.read1(65536)
    first_byte = time.perf_counter() - started
    size, newlines, last = len(first), first.count(b"\n"), first
    while True:
        block = response.read1(1 << 20)
        if not block:
            break
        size += len(block)
        newlines += block.count(b"\n")
        last = block
    seconds = time.perf_counter() - started
    conn.close()
    peak = _status_kb(worker, "VmHWM")
    return {
        "seconds": seconds,
        "first_byte": first_byte,
        "bytes": size,
        "newlines": newlines,
        "rss_before_mb": rss_before / 1024,
        "rss_growth_mb": (peak - rss_before) / 1024,
        "tail": last[-200:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()

    started = time.monotonic()
    database_url = create_database()
    server = None
    try:
        env = server_env(database_url)
        data = seed(env, database_url, args.rows)
        print(f"seeded {args.rows:,} evaluations in {data['seed_seconds']:.1f} s")
        port = free_port()
        server = start_server(env, port, workers=1, threads=2)
        worker = _worker_pid(server.pid)
        # Warm the worker (imports, connection) on a one-row export before measuring.
        export(port, data["key"], "format=csv&policy=100&agent=agent-0&after_id=999990", worker)
        copy_baseline(database_url, data["tenant"])
        copies = [copy_baseline(database_url, data["tenant"]) for _ in range(2)]
        base = min(copies, key=lambda c: c["seconds"])
        results = {fmt: export(port, data["key"], f"format={fmt}", worker) for fmt in ("csv", "jsonl")}
    finally:
        if server is not None:
            stop_server(server)
        if not args.keep:
            _admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')

    assert base["rows"] == args.rows, base
    copy_rate = base["rows"] / base["seconds"]
    print(
        f"server: gunicorn gthread, 1 worker x 2 threads, DEBUG off, PostgreSQL; client in this process; "
        f"{os.cpu_count()} cores shared by client, server and database"
    )
    print(
        f"{'COPY (SELECT * …) TO STDOUT csv':<36} {base['rows']:>9,} rows {base['seconds']:7.2f} s "
        f"{copy_rate:>10,.0f} rows/s {base['bytes'] / base['seconds'] / 1e6:7.1f} MB/s"
    )
    ok = True
    for fmt, r in results.items():
        rows = r["newlines"] - (1 if fmt == "csv" else 0)
        rate = rows / r["seconds"]
        ratio = rate / copy_rate
        print(
            f"{'GET /api/v1/evaluations/export ' + fmt:<36} {rows:>9,} rows {r['seconds']:7.2f} s "
            f"{rate:>10,.0f} rows/s {r['bytes'] / r['seconds'] / 1e6:7.1f} MB/s  ratio {ratio:.2f}x COPY  "
            f"first byte {r['first_byte'] * 1000:.0f} ms  worker RSS {r['rss_before_mb']:.0f} MB "
            f"+{r['rss_growth_mb']:.1f} MB peak"
        )
        if rows != args.rows:
            print(f"  ERROR: {rows} rows exported, {args.rows} expected; tail {r['tail']!r}", file=sys.stderr)
            ok = False
        ok = ok and ratio >= 0.3 and r["first_byte"] < 1.0 and r["rss_growth_mb"] < 50
    print(f"total wall time {time.monotonic() - started:.1f} s")
    print("targets (ratio >= 0.3, first byte < 1 s, RSS growth < 50 MB):", "met" if ok else "NOT met")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
