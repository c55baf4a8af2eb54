"""The benchmarks still run: each is started with a tiny workload and must print its figures.

A benchmark is only run by hand, so one that a change to a shared helper broke (bench/report.py's
set-up, say) would otherwise stay broken until someone needs its figures. These runs measure
nothing; they check that each script gets from set-up to its last line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def bench(script: str, *args: str, database_url: str | None, extra: dict | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    if database_url:
        env["DATABASE_URL"] = database_url
    env.update(extra or {})
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    # A benchmark that printed its verdict on the targets ran to the end; on a tiny workload on a
    # busy machine the verdict itself (export.py exits 1 on "NOT met") measures nothing.
    finished = done.returncode == 0 or (done.returncode == 1 and "\ntargets (" in done.stdout)
    assert finished, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def ratio(output: str, name: str = "ratio") -> float:
    found = re.findall(rf"^{name}=([0-9.]+)$", output, flags=re.MULTILINE)
    assert found, output
    return float(found[-1])


def test_run_growth_runs_on_sqlite():
    out = bench("run_growth.py", "--reports", "12", "--window", "3", database_url=None)
    assert "database: SQLite" in out
    assert re.search(r"^complete: [0-9.]+ ms$", out, flags=re.MULTILINE), out
    assert ratio(out) > 0
    assert ratio(out, "sequential_ratio") > 0


def test_trace_page_runs_on_sqlite():
    out = bench("trace_page.py", "--reports", "30", "--small", "3", "--reps", "2", database_url=None)
    assert "database: sqlite" in out
    figures = r"^trace tab, +30 reports: median +[0-9.]+ ms wall, +[0-9.]+ ms work, \d+ queries$"
    assert re.search(figures, out, flags=re.MULTILINE), out
    assert ratio(out) > 0 and ratio(out, "wall_ratio") > 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="bench/report.py needs PostgreSQL (CI has it)")
def test_report_bench_runs_on_postgresql():
    server = connection.settings_dict
    # A database of its own: the benchmark drops and creates the one it is given.
    name = f"groundrule_bench_smoke_{uuid.uuid4().hex[:8]}"
    url = f"postgres://{server['USER']}@{server['HOST']}:{server['PORT']}/{name}"
    out = bench(
        "report.py",
        *("--requests", "40", "--rounds", "1", "--runs", "4", "--threads", "2", "--workers", "1"),
        database_url=url,
    )
    assert re.search(r"POST /api/v1/runs/\{id\}/grounding/ .* errors 0$", out, flags=re.MULTILINE), out
    assert ratio(out) > 0
    assert ratio(out, "ratio_inflation_rule") > 0


def _pg_env(db_var: str) -> dict:
    server = connection.settings_dict
    return {
        "BENCH_PG": f"postgres://{server['USER']}@{server['HOST']}:{server['PORT']}",
        db_var: f"groundrule_bench_smoke_{uuid.uuid4().hex[:8]}",
    }


@pytest.mark.skipif(connection.vendor != "postgresql", reason="bench/replay.py needs PostgreSQL (CI has it)")
def test_replay_bench_runs_on_postgresql():
    out = bench("replay.py", "--reports", "500", database_url=None, extra=_pg_env("BENCH_DB"))
    for policies in (" 1", "20"):
        line = rf"^policies={policies} engine: .* replay: [0-9,]+ reports/s .* ratio=[0-9.]+$"
        assert re.search(line, out, flags=re.MULTILINE), out


@pytest.mark.skipif(connection.vendor != "postgresql", reason="bench/export.py needs PostgreSQL (CI has it)")
def test_export_bench_runs_on_postgresql():
    out = bench("export.py", "--rows", "2000", database_url=None, extra=_pg_env("BENCH_EXPORT_DB"))
    assert re.search(r"export csv +2,000 rows .* ratio [0-9.]+x COPY", out), out
    assert re.search(r"export jsonl +2,000 rows .* ratio [0-9.]+x COPY", out), out


@pytest.mark.skipif(connection.vendor != "postgresql", reason="bench/mix.py needs PostgreSQL (CI has it)")
def test_mix_bench_runs_on_postgresql():
    out = bench("mix.py", "--reps", "5", "--history", "3", database_url=None, extra=_pg_env("MIX_DB"))
    for op in ("ping", "start", "report_shared", "complete", "run_read", "page", "check"):
        assert re.search(rf"^{op} +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+$", out, flags=re.MULTILINE), out
    assert ratio(out) > 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="bench/policy_plan.py needs PostgreSQL (CI has it)")
def test_policy_plan_bench_runs_on_postgresql():
    out = bench("policy_plan.py", "--reports", "200", "--policies", "5", database_url=None, extra=_pg_env("BENCH_DB"))
    assert re.search(r"^plan 5 changes, no cap: +[0-9]+ ms +reports=200 ", out, flags=re.MULTILINE), out
    assert ratio(out, "ratio_plan_vs_one_replay") > 0


def test_hostile_checks_bench_runs():
    # One round of eight hostile checks against gunicorn; the verdict on the targets may say
    # "NOT met" on a busy machine, which this run does not measure.
    out = bench("hostile_checks.py", "--rounds", "1", "--workers", "2", "--baseline-seconds", "1", database_url=None)
    assert "per hostile request" in out and "refused (429)" in out
    assert ratio(out) > 0


def test_outbox_relay_bench_runs_on_sqlite():
    out = bench("outbox_relay.py", "--pending", "200", "--due", "20", "--passes", "3", database_url=None)
    assert "20 due, sent" in out
    assert ratio(out) > 0
