"""Benchmark: hostile grounding checks against gunicorn as deployed, and /healthz beside them.

Run from the repository root:  .venv/bin/python bench/hostile_checks.py [--rounds 3] [--workers 3]

Starts gunicorn as deploy/prod_local.py does (gthread workers, 4 threads each, --preload) on
loopback, on a SQLite file of its own, with the cache on a redis-server of its own when one is
installed (the per-key in-flight slots are then shared by the workers, as with CACHE_URL in a
deployment). Then, in one run:

* baseline: /healthz polled for a few seconds with nothing else running;
* spread: eight hostile checks at once, from eight API keys (every one admitted), for ``--rounds``
  rounds, while /healthz is polled; CPU seconds of the web workers per hostile check;
* one key: eight hostile checks at once from one key: GROUNDING_CHECK_MAX_IN_FLIGHT of them run,
  the rest are answered 429 at once.

A hostile check is the finding's: an 11 KB body, a claim of 290 numbers (or 110 pairs of names)
against a source as dense, within every character limit; it held a worker for ~10 s of CPU before
the verifier's work budget (VERIFIER_MAX_WORK). Prints the worst and p99 /healthz latency of each
phase with its ratio to the baseline, the CPU per hostile request, the status codes, the targets
(p99 under 250 ms while they run; each hostile request under 0.5 s of CPU or refused) and, as the
last line, ``ratio=<p99 under load / p99 baseline>``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from server_process import ServerProcess, free_port  # noqa: E402

NUMBERS = {"text": "The hospital has " + "350 beds, " * 290, "sources": [{"id": "s", "text": "… 420 beds and " * 615}]}
NAMES = {
    "text": "Alice Smith met " + "Bob Jones and Carol King, " * 110 + ".",
    "sources": [{"id": "s", "text": "Alice Smith met " + "Dan Brown and Eve Adams, " * 320 + "."}],
}


def workers_cpu(master: int) -> float:
    """CPU seconds (user + system) of the gunicorn master's worker processes."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:  # ppid
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


class Poller(threading.Thread):
    """/healthz, every 20 ms, until stopped: the latencies in seconds."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.times, self.stop = url, [], threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=60) as http:
            while not self.stop.is_set():
                started = time.perf_counter()
                assert http.get(self.url + "/healthz").status_code == 200
                self.times.append(time.perf_counter() - started)
                time.sleep(0.02)


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[98] if len(times) >= 2 else times[0]


def line(name: str, times: list[float], base: float) -> str:
    return (
        f"{name:<34} n={len(times):>4}  p50 {statistics.median(times) * 1000:7.1f} ms  p99 {p99(times) * 1000:7.1f} ms"
        f"  worst {max(times) * 1000:7.1f} ms  p99 x{p99(times) / base:5.1f}"
    )


def hostile(url: str, keys: list[str]) -> list[tuple[int, float]]:
    """Eight hostile checks at once, the i-th with keys[i % len(keys)]: (status, seconds) each."""

    def one(i: int) -> tuple[int, float]:
        body = NUMBERS if i % 2 == 0 else NAMES
        started = time.perf_counter()
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {keys[i % len(keys)]}"}) as c:
            status = c.post(url + "/api/v1/grounding/check/", json=body).status_code
        return status, time.perf_counter() - started

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(8)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (deploy/prod_local.py's default)")
    parser.add_argument("--baseline-seconds", type=float, default=4.0)
    args = parser.parse_args()

    redis_proc, env = None, {}
    if shutil.which("redis-server"):
        port = free_port()
        redis_proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no"],
            stdout=subprocess.DEVNULL,
        )
        env["CACHE_URL"] = f"redis://127.0.0.1:{port}/0"
    env["API_RATE_LIMIT"] = "off"  # the rate per minute is not what is measured here
    # With DEBUG off the settings refuse the public development keys.
    env["SECRET_KEY"] = "bench-secret-key-not-for-production-0123456789abcdef"
    env["GOVERNANCE_SECRETS_KEY"] = "bench-secrets-key-not-for-production-0123456789abcdef"
    env["PYTHONWARNINGS"] = "ignore"
    workdir = Path(tempfile.mkdtemp(prefix="hostile-"))
    server = ServerProcess(workdir, extra_env=env)
    gunicorn = None
    try:
        server.manage("migrate", "--noinput", "-v", "0")
        server.manage("create_tenant", server.tenant)
        keys = [server.api_key("agent") for _ in range(8)]
        log = open(workdir / "gunicorn.log", "w")
        gunicorn = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{server.port}"]
            + ["--workers", str(args.workers), "--worker-class", "gthread", "--threads", "4", "--preload"]
            + ["--log-level", "warning"],
            cwd=ROOT,
            env=server.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(server.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or gunicorn.poll() is not None:
                raise SystemExit((workdir / "gunicorn.log").read_text())
            time.sleep(0.2)
        # every worker loads the models before anything is timed
        hostile(server.url, keys)

        poller = Poller(server.url)
        poller.start()
        time.sleep(args.baseline_seconds)
        baseline = list(poller.times)

        before_cpu, spread, mark = workers_cpu(gunicorn.pid), [], len(poller.times)
        for _ in range(args.rounds):
            spread += hostile(server.url, keys)
        spread_cpu = workers_cpu(gunicorn.pid) - before_cpu
        under_load = poller.times[mark:]

        before_cpu, mark = workers_cpu(gunicorn.pid), len(poller.times)
        one_key = hostile(server.url, keys[:1])
        one_key_cpu = workers_cpu(gunicorn.pid) - before_cpu
        one_key_times = poller.times[mark:]
        poller.stop.set()
        poller.join()
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=20)
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)

    base = p99(baseline)
    admitted = [s for s, _ in spread if s == 200]
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"gunicorn x{args.workers} (gthread, 4 threads), cache: {'redis' if redis_proc else 'in-process'}")
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (1/5/15 min) at the end")
    print(line("/healthz baseline (no load)", baseline, base))
    print(line(f"/healthz, 8 hostile x{args.rounds} (8 keys)", under_load, base))
    print(line("/healthz, 8 hostile (one key)", one_key_times or baseline, base))
    per_request = spread_cpu / max(1, len(admitted))
    print(f"hostile checks, 8 keys: statuses {sorted(set(s for s, _ in spread))}, {len(admitted)} answered;")
    print(f"  worker CPU {spread_cpu:.2f} s in all, {per_request:.3f} s per hostile request")
    walls = [t for _, t in spread]
    print(f"  wall per request: p50 {statistics.median(walls):.2f} s, worst {max(walls):.2f} s")
    refused = sum(1 for s, _ in one_key if s == 429)
    print(f"hostile checks, one key: {sum(1 for s, _ in one_key if s == 200)} answered, {refused} refused (429);")
    print(f"  worker CPU {one_key_cpu:.2f} s in all")
    p99_ok = p99(under_load) < 0.25
    cpu_ok = per_request < 0.5
    print(
        f"targets (/healthz p99 < 250 ms under load: {'met' if p99_ok else 'NOT met'}; "
        f"each hostile request < 0.5 s CPU or refused: {'met' if cpu_ok else 'NOT met'})"
    )
    print(f"ratio={p99(under_load) / base:.2f}")
    return 0 if p99_ok and cpu_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
