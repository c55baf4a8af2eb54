"""Benchmark the pure policy engine: decisions per second for 1, 10 and 100 grounding policies.

    .venv/bin/python bench/engine.py

The baseline is a "null engine": the same number of allow Evaluations built and combined with no
rule run, i.e. the per-policy cost any engine with this output shape pays. The last line,
``ratio=…``, is the real engine's µs per decision at 100 policies over the null engine's.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies.categories import get_category
from policies.engine import (
    PolicySpec,
    RunState,
    _new_evaluation,
    combine,
    evaluate_phase,
)

SIZES = (1, 10, 100)
REPEATS = 5
TARGET_US = 100.0  # 0.1 ms per decision at 100 policies
TIME_PER_MEASURE = 0.1  # seconds each repeat aims for

GROUNDING = get_category("grounding")

# A spread of realistic policies (docs/grounding-policies.md examples and RAG variants), cycled up to N.
RULE_SETS = [
    {  # Strict Research Assistant
        "require_source_grounding": True,
        "min_grounding_score": 0.8,
        "min_citations": 2,
        "max_unsupported_claims": 0,
        "abstention_threshold": 0.5,
        "abstention_response": "I don't have sufficient grounded evidence to answer this.",
        "action_on_violation": "block",
    },
    {  # RAG Pipeline
        "min_grounding_score": 0.7,
        "score_relevance_floor": 0.5,
        "score_eval_mode": "all",
        "min_citations": 1,
        "action_on_violation": "block",
    },
    {  # Lenient Average-Based
        "min_grounding_score": 0.7,
        "score_relevance_floor": 0.4,
        "score_eval_mode": "average",
        "action_on_violation": "warn",
    },
    {"min_grounding_score": 0.6, "score_eval_mode": "top_n", "score_top_n": 3},
    {"min_grounding_score": 0.6, "min_citations": 1, "max_unsupported_claims": 3},
]

# A passing run: every policy evaluates its rules fully and allows, the common case.
STATE = RunState(
    grounding_scores=(0.92, 0.87, 0.85, 0.35, 0.22),
    citations=("Federal Reserve Report", "IMF Analysis", "SEC Filing 2023"),
    unsupported_claims=(),
    output_confidence=0.88,
)
# With floors, the tail scores are ignored; without, they are what policies check.
MID_STATE = RunState(grounding_scores=(0.92, 0.87, 0.85, 0.81, 0.9))


def make_policies(n: int) -> list[PolicySpec]:
    policies = []
    for i in range(n):
        raw = RULE_SETS[i % len(RULE_SETS)]
        rules = GROUNDING.effective_rules(GROUNDING.clean_rules(raw))
        policies.append(PolicySpec(i + 1, f"Policy {i + 1}", "grounding", 1, rules))
    return policies


def null_engine(phase: str, policies: list[PolicySpec]):
    # Built the way the engine builds them, so the ratio measures rule work, not construction.
    evaluations = [
        _new_evaluation(p.id, p.name, p.category, p.version, phase, "allow", "ok", {}, None, "engine") for p in policies
    ]
    return combine(phase, evaluations)


def best_us(func) -> float:
    """Best-of-N µs per call, timeit style, with the loop count sized automatically."""
    timer = timeit.Timer(func)
    number, elapsed = timer.autorange()
    number = max(1, int(number * TIME_PER_MEASURE / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=REPEATS, number=number)) / number * 1e6


def main() -> None:
    rows = []
    results = {}
    for phase, state in (("mid_execution", MID_STATE), ("after_workflow", STATE)):
        for n in SIZES:
            policies = make_policies(n)
            decision = evaluate_phase(phase, policies, state)
            assert decision.action == "allow", decision.reason
            real = best_us(lambda phase=phase, policies=policies, state=state: evaluate_phase(phase, policies, state))
            null = best_us(lambda phase=phase, policies=policies: null_engine(phase, policies))
            results[(phase, n)] = (real, null)
            rows.append((phase, n, real, 1e6 / real, null, real / null))

    print(f"Python {sys.version.split()[0]}, best of {REPEATS} repeats")
    header = f"{'phase':<16}{'policies':>9}{'µs/decision':>14}{'decisions/s':>14}{'null µs':>10}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for phase, n, real, per_second, null, ratio in rows:
        print(f"{phase:<16}{n:>9}{real:>14.2f}{per_second:>14,.0f}{null:>10.2f}{ratio:>8.2f}")

    worst_100 = max(results[(phase, 100)][0] for phase in ("mid_execution", "after_workflow"))
    verdict = "under" if worst_100 < TARGET_US else "OVER"
    print(f"100-policy decision: {worst_100:.2f} µs, {verdict} the {TARGET_US:.0f} µs target")
    real_100 = sum(results[(p, 100)][0] for p in ("mid_execution", "after_workflow"))
    null_100 = sum(results[(p, 100)][1] for p in ("mid_execution", "after_workflow"))
    print(f"ratio={real_100 / null_100:.2f}")


if __name__ == "__main__":
    main()
