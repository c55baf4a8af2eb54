"""Benchmark replay (issue 11 item 2): stored reports re-evaluated per second on PostgreSQL.

    .venv/bin/python bench/replay.py [--reports 100000] [--per-run 5] [--keep]

Creates a fresh PostgreSQL database (``groundrule_bench_replay``, dropped at the end unless
--keep), migrates it, stores ``--reports`` grounding reports (``--per-run`` per run, varied scores,
citations, claims and confidences) and replays them with one and with twenty enforced policies,
a strict candidate added. For each it prints:

- ``engine``: the pure replayer over the same rows already in memory (no database): the baseline;
- ``replay``: governance.replay.replay_run, what the endpoint does (read from PostgreSQL + engine);

as reports/s, and ``ratio`` = replay / engine (how much of the engine's speed survives the reads).
The target is replay >= 20,000 reports/s with one policy. PostgreSQL comes from BENCH_PG
(default postgres://postgres@127.0.0.1:5432).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from history import store_reports, throwaway_database  # noqa: E402

DB_NAME = os.environ.get("BENCH_DB", "groundrule_bench_replay")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--per-run", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    with throwaway_database(DB_NAME, keep=args.keep):
        _run(args)


def _run(args) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django_scopes import scope

    from governance import replay as stored_replay
    from policies import services as policy_services
    from policies.replay import replay
    from tenants import services as tenant_services
    from tenants.audit import Actor

    call_command("migrate", verbosity=0)
    actor = Actor.system("bench")
    tenant = tenant_services.tenant_create(slug="bench", name="Bench", actor=actor)
    started = time.perf_counter()
    with scope(tenant=tenant):
        runs_n = store_reports(tenant, reports=args.reports, per_run=args.per_run, seed=11)
    print(f"stored {runs_n * args.per_run} reports in {runs_n} runs in {time.perf_counter() - started:.1f}s")

    strict = {
        "min_grounding_score": 0.8,
        "min_citations": 2,
        "max_unsupported_claims": 0,
        "abstention_threshold": 0.5,
        "action_on_violation": "block",
    }
    body = {"policy": {"category": "grounding", "rules": strict}}
    made = 0
    for count in (1, 20):
        with scope(tenant=tenant):
            while made < count:
                policy_services.policy_create(
                    tenant=tenant,
                    actor=actor,
                    name=f"Policy {made}",
                    category="grounding",
                    rules={"min_grounding_score": 0.5 + made / 100, "min_citations": made % 3},
                    scope={"agents": [] if made % 2 == 0 else ["agent-*"]},
                )
                made += 1
            tenant.refresh_from_db()
            plan = stored_replay.replay_request(tenant=tenant, data=body)

            # The baseline: the pure replayer over the same rows, read beforehand (untimed).
            rows = list(stored_replay.run_rows(tenant.pk, plan))
            from policies.engine import PolicySpec

            before = [PolicySpec.from_dict(s) for s in plan["before"]]
            after = [PolicySpec.from_dict(s) for s in plan["after"]]
            t0 = time.perf_counter()
            baseline = replay(rows, before=before, after=after)
            engine_s = time.perf_counter() - t0

            t0 = time.perf_counter()
            result = stored_replay.replay_run(tenant_id=tenant.pk, plan=plan)
            full_s = time.perf_counter() - t0
        assert result["reports"] == baseline.reports, (result["reports"], baseline.reports)
        assert result["before"] == baseline.before and result["after"] == baseline.after
        engine_rps = baseline.reports / engine_s
        full_rps = result["reports"] / full_s
        print(
            f"policies={count:2d} reports={result['reports']} runs={result['runs']} "
            f"before={result['before']} after={result['after']} changed_runs={result['changed_runs']}"
        )
        print(
            f"policies={count:2d} engine: {engine_rps:,.0f} reports/s ({engine_s:.2f}s)  "
            f"replay: {full_rps:,.0f} reports/s ({full_s:.2f}s)  ratio={full_rps / engine_rps:.2f}"
        )


if __name__ == "__main__":
    main()
