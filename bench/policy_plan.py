"""Benchmark `POST /api/v1/policies/plan/` (docs/policies-as-code.md): a directory of 50 policy files
over 100,000 stored reports, on PostgreSQL.

    .venv/bin/python bench/policy_plan.py [--reports 100000] [--per-run 5] [--policies 50] [--keep]

Creates a fresh PostgreSQL database (``groundrule_bench_plan``, dropped at the end unless --keep),
stores ``--reports`` grounding reports (``--per-run`` per run, spread over the last six days, bulk
inserted) and ``--policies`` enforced policies, then times the plan service (what the endpoint runs,
without HTTP) on files that change every policy's threshold. Printed, all from this one run:

- ``diff only``: the plan with replay_days=0 (validation and the field diff): the first baseline;
- ``one replay``: governance.replay.replay_run of one candidate over every report: what the replay
  endpoint costs for a single change, the second baseline;
- ``plan 1 change``, ``plan N changes``: the plan with the default report cap (POLICY_PLAN_MAX_REPORTS);
- ``plan N changes, no cap``: the plan over every stored report;

and the ratios: plan N changes (no cap) / one replay (what replaying every change alone and all of
them together in one pass costs, against one replay), plan N changes (no cap) / N × one replay (against
replaying each change on its own), and plan N changes / diff only. PostgreSQL comes from BENCH_PG
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

DB_NAME = os.environ.get("BENCH_DB", "groundrule_bench_plan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--per-run", type=int, default=5)
    parser.add_argument("--policies", type=int, default=50)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    with throwaway_database(DB_NAME, keep=args.keep):
        _run(args)


def _store(tenant, reports_n: int, per_run: int) -> None:
    store_reports(tenant, reports=reports_n, per_run=per_run, seed=43, spread_minutes=6 * 24 * 60)


def _timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def _run(args) -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django_scopes import scope

    from governance import replay as stored_replay
    from governance.policy_plan import policies_plan
    from policies import services as policy_services
    from policies.models import Policy
    from tenants import services as tenant_services
    from tenants.audit import Actor

    call_command("migrate", verbosity=0)
    actor = Actor.system("bench")
    tenant = tenant_services.tenant_create(slug="bench", name="Bench", actor=actor)
    with scope(tenant=tenant):
        _, stored_s = _timed(lambda: _store(tenant, args.reports, args.per_run))
        print(f"stored {args.reports} reports in {args.reports // args.per_run} runs in {stored_s:.1f}s")
        for n in range(args.policies):
            policy_services.policy_create(
                tenant=tenant,
                actor=actor,
                name=f"Policy {n:02d}",
                category="grounding",
                rules={"min_grounding_score": 0.5 + n / 200, "min_citations": n % 3},
                scope={"agents": [] if n % 2 == 0 else [f"agent-{n % 7}"]},
            )
        tenant.refresh_from_db()
        files = [
            {
                "name": p.name,
                "category": p.category,
                "rules": {**p.rules, "min_grounding_score": round(p.rules["min_grounding_score"] + 0.05, 3)},
                "scope": p.scope,
            }
            for p in Policy.objects.filter(tenant=tenant).order_by("id")
        ]
        first = Policy.objects.filter(tenant=tenant).order_by("id").first()
        stored = Policy.objects.filter(tenant=tenant).order_by("id")
        as_stored = [{**f, "rules": p.rules} for f, p in zip(files, stored, strict=True)]

        def plan(policies, days=7):
            return policies_plan(tenant=tenant, data={"policies": policies, "replay_days": days})

        policies_plan(tenant=tenant, data={"policies": files[:1], "replay_days": 0})  # warm caches (untimed)
        diff_only, diff_s = _timed(lambda: plan(files, days=0))
        body = {"policy_id": first.pk, "policy": {"category": "grounding", "rules": files[0]["rules"]}}
        request = stored_replay.replay_request(tenant=tenant, data=body)
        single, single_s = _timed(lambda: stored_replay.replay_run(tenant_id=tenant.pk, plan=request))
        one, one_s = _timed(lambda: plan(files[:1] + as_stored[1:]))
        capped, capped_s = _timed(lambda: plan(files))
        cap = settings.POLICY_PLAN_MAX_REPORTS
        settings.POLICY_PLAN_MAX_REPORTS = args.reports * 2
        full, full_s = _timed(lambda: plan(files))
        settings.POLICY_PLAN_MAX_REPORTS = cap

    n = len(files)
    assert diff_only["changes"]["update"] == n and full["changes"]["update"] == n and one["changes"]["update"] == 1
    assert full["replay"]["reports"] == args.reports and not full["replay"]["sampled"], full["replay"]
    # The plan's impact of the first change alone is the single replay's answer.
    first_impact = next(p for p in full["policies"] if p["name"] == first.name)["impact"]
    assert first_impact["changed_runs"] == single["changed_runs"], (first_impact, single["changed_runs"])
    print(f"files={n} reports={args.reports} cap={cap} (POLICY_PLAN_MAX_REPORTS)")
    print(f"diff only (replay_days=0):      {diff_s * 1000:8.0f} ms")
    print(f"one replay (replay endpoint):   {single_s * 1000:8.0f} ms  reports={single['reports']}")
    print(f"plan 1 change:                  {one_s * 1000:8.0f} ms  reports={one['replay']['reports']}")
    print(
        f"plan {n} changes:                {capped_s * 1000:8.0f} ms  reports={capped['replay']['reports']} "
        f"sampled={capped['replay']['sampled']} changed_decisions={capped['impact']['changed_decisions']}"
    )
    print(
        f"plan {n} changes, no cap:        {full_s * 1000:8.0f} ms  reports={full['replay']['reports']} "
        f"changed_decisions={full['impact']['changed_decisions']}"
    )
    print(f"ratio_plan_vs_one_replay={full_s / single_s:.2f}")
    print(f"ratio_plan_vs_{n}_replays={full_s / (n * single_s):.3f}")
    print(f"ratio_capped_plan_vs_diff_only={capped_s / diff_s:.1f}")


if __name__ == "__main__":
    main()
