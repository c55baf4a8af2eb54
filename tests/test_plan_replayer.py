"""The plan's replayer (policies.replay.PlanReplayer) decides as the replay's (Replayer) does: for each
candidate set, the same decisions change, the same way, on the same runs. Pure: no database."""

import random

from policies.categories import get_category
from policies.engine import PolicySpec
from policies.replay import PlanReplayer, ReportRow, RunRow, enforced_only, replay

GROUNDING = get_category("grounding")


def spec(policy_id: int, agents=(), mode="enforce", **rules) -> PolicySpec:
    return PolicySpec(policy_id, f"P{policy_id}", "grounding", 1, GROUNDING.effective_rules(rules), tuple(agents), mode)


def history(rng: random.Random, runs: int = 300) -> list[RunRow]:
    rows = []
    for run_id in range(1, runs + 1):
        reports = [
            ReportRow(
                [round(rng.uniform(0.3, 1.0), 2) for _ in range(rng.randint(0, 3))],
                [f"doc-{rng.randint(1, 5)}" for _ in range(rng.randint(0, 2))],
                ["claim"] * rng.randint(0, 2),
                round(rng.uniform(0.2, 1.0), 2) if rng.random() < 0.5 else None,
                "An answer.",
                None,
                (),
            )
            for _ in range(rng.randint(0, 4))
        ]
        rows.append(RunRow(run_id, f"agent-{run_id % 3}", reports, rng.random() < 0.8, "Final answer."))
    return rows


def test_each_candidate_set_changes_what_a_replay_of_it_changes():
    rng = random.Random(43)
    rows = history(rng)
    before = enforced_only(
        (
            spec(1, min_grounding_score=0.6),
            spec(2, agents=["agent-1"], min_citations=2, action_on_violation="block"),
            spec(3, agents=["agent-2", "agent-0"], max_unsupported_claims=1),
            spec(4, mode="shadow", min_grounding_score=0.99),
        )
    )
    p1, p2, p3 = before
    sets = [
        (spec(1, min_grounding_score=0.8), p2, p3),  # a threshold raised
        (p1, p3),  # a policy deleted (or disabled)
        (p1, p2, p3, spec(10**12, agents=["agent-1"], abstention_threshold=0.5, action_on_violation="block")),
        (p1, spec(2, agents=["agent-*"], min_citations=1), p3),  # a scope widened
        (spec(1, min_grounding_score=0.8), p3, spec(10**12, require_source_grounding=True)),  # all at once
    ]
    planned = PlanReplayer(before, sets)
    for row in rows:
        planned.run(row)
    for after, impact in zip(sets, planned.impacts, strict=True):
        summary = replay(rows, before=before, after=after)
        assert impact.changed_runs == summary.changed_runs
        if len(summary.changed) < 100:  # the replay keeps its first 100 changed decisions only
            assert impact.changed_decisions == len(summary.changed)
        assert impact.changed == summary.changed[: len(impact.changed)]
        moved = {key: 0 for key in ("allow", "warn", "block")}
        for transition, count in impact.transitions.items():
            old, new = transition.split("→")
            moved[old] -= count
            moved[new] += count
        assert {k: summary.before[k] + moved[k] for k in moved} == summary.after
        assert impact.decisions == planned.decisions == sum(summary.before.values())
    assert all(impact.changed_decisions for impact in planned.impacts)


def test_a_set_equal_to_the_enforced_policies_changes_nothing():
    before = (spec(1, min_grounding_score=0.6),)
    planned = PlanReplayer(before, [before])
    for row in history(random.Random(7), runs=50):
        planned.run(row)
    assert planned.impacts[0].changed_decisions == 0 and planned.impacts[0].transitions == {}
