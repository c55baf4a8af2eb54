"""Does a report cost more the more reports its run already has? One run, many reports, over HTTP.

    .venv/bin/python bench/run_growth.py [--reports 1000] [--window 20]

Starts gunicorn (DEBUG off) on a free loopback port, as bench/report.py does, against the
database DATABASE_URL names: a PostgreSQL database is dropped and created afresh (and dropped at
the end); anything else (or no DATABASE_URL) runs on a fresh SQLite file in a temporary
directory. One tenant, bench/report.py's five grounding policies plus one that requires every
citation to resolve (so each report's citations are looked up among the run's sources), and one
run. A single keep-alive client then sends the reports one after another; each carries three
~1 KB sources of its own and three citations: a quoted one and a plain one to its own sources,
and one to a source of the run's first report. Then it completes the run (after_workflow audits
every citation against the sources).

The machine is shared and noisy, and a load change during the run would read as growth. So the
baseline is measured beside what it is compared with: while the long run sends its last `--window`
reports, a second, fresh run of the same tenant sends its first `--window` reports, one of each in
turn. `ratio=<last/first>` compares those (target <= 1.25); the first `--window` reports of the long
run, taken at the start, are printed too (`sequential_ratio`) for reference. Then it prints the
latency of `complete` on the long run (target < 250 ms).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report as bench  # bench/report.py: database, gunicorn and set-up helpers

RESOLVING = (
    "Citations must resolve",
    {"citations_must_resolve": True, "min_citations": 0, "action_on_violation": "warn"},
    [],
)
FILLER = (
    "Central banks raised rates through the year while inflation eased; analysts expected the "
    "tightening cycle to end once core prices settled near the target. "
)


def source_text(n: int, k: int) -> str:
    head = f"Report {n}, source {k}: the committee met on day {n} and noted item {k}. "
    return (head + FILLER * 8)[:1000]


def report_body(n: int) -> dict:
    sources = [{"id": f"r{n}-s{k}", "text": source_text(n, k), "score": 0.9} for k in range(3)]
    citations = [{"source_id": f"r{n}-s0", "quote": f"the committee met on day {n}"}, f"r{n}-s1", "r1-s2"]
    return {
        "grounding_scores": [0.92, 0.87, 0.81],
        "citations": citations,
        "unsupported_claims": [],
        "output_confidence": 0.88,
        "output": f"Answer after step {n}.",
        "sources": sources,
    }


def timed(conn: http.client.HTTPConnection, path: str, body: dict, key: str) -> float:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", "Connection": "keep-alive"}
    started = time.perf_counter()
    conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
    response = conn.getresponse()
    payload = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status != 200:
        raise SystemExit(f"{path} answered {response.status}: {payload[:300]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--window", type=int, default=20)
    args = parser.parse_args()

    postgres = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
    tmp = tempfile.TemporaryDirectory()
    database_url = bench.create_database() if postgres else f"sqlite:///{tmp.name}/run_growth.sqlite3"
    bench.POLICIES.append(RESOLVING)
    server = None
    try:
        env = bench.server_env(database_url)
        data = bench.setup_data(env, 2)["report"]
        key, (run_id, fresh_run_id) = data["key"], data["runs"]
        port = bench.free_port()
        server = bench.start_server(env, port, workers=1, threads=1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        w = args.window
        long_path, fresh_path = f"/api/v1/runs/{run_id}/grounding/", f"/api/v1/runs/{fresh_run_id}/grounding/"
        latencies = [timed(conn, long_path, report_body(n), key) for n in range(1, args.reports - w + 1)]
        fresh = []
        for k in range(1, w + 1):  # the fresh run's reports 1..w alternate with the long run's last w
            fresh.append(timed(conn, fresh_path, report_body(k), key))
            latencies.append(timed(conn, long_path, report_body(args.reports - w + k), key))
        complete_ms = timed(conn, f"/api/v1/runs/{run_id}/complete/", {"output": "Final answer."}, key)
        conn.close()
    finally:
        if server is not None:
            bench.stop_server(server)
        if postgres:
            bench.drop_database()
        tmp.cleanup()

    first, last = statistics.median(latencies[:w]), statistics.median(latencies[-w:])
    baseline = statistics.median(fresh)
    print(
        f"database: {'PostgreSQL' if postgres else 'SQLite'}; gunicorn, 1 worker, DEBUG off; one run, "
        f"{args.reports} reports of 3 x 1 KB sources and 3 citations each, {len(bench.POLICIES)} policies"
    )
    print(
        f"median report latency, long run reports {args.reports - w + 1}-{args.reports}: {last:.2f} ms; "
        f"fresh run reports 1-{w}, sent in turn with them: {baseline:.2f} ms; "
        f"long run reports 1-{w}, at the start: {first:.2f} ms"
    )
    print(f"complete: {complete_ms:.1f} ms")
    print(f"sequential_ratio={last / first:.2f}")
    print(f"ratio={last / baseline:.2f}")


if __name__ == "__main__":
    main()
