"""Calibration from reviewers (issue 11 item 4), the pure part.

Reviewers confirm or dismiss violations. For each numeric threshold a policy uses, this finds the
value that would have kept the most confirmed violations while dropping the most dismissed ones,
by judging each reviewed violation again under candidate values, with what was stored for it:

- the engine's thresholds (``THRESHOLDS`` with source "engine"): the violation's decision state
  is rebuilt from the stored reports (policies/replay.py ``decision_states``, the score audit the
  engine read included) and the policy's check run again with the value changed;
- the LLM judge's ``llm_grounding_threshold``: the judge's stored score against the value;
- the verifier's ``entailment_threshold``, ``contradiction_threshold`` and
  ``max_unverifiable_ratio``: its stored per-claim probabilities re-thresholded
  (policies/judged.py), the same function replay uses.

Not calibrated, and listed under ``not_calibrated`` with the reason: ``score_audit_rate`` (how
often reports are sampled, it decides no violation), and any threshold none of whose reviewed
violations has its input stored. No suggestion is made below MIN_REVIEWED reviewed violations.
No Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import judged
from .categories import get_category
from .engine import RunState

MIN_REVIEWED = 10
GRID = tuple(round(i * 0.05, 2) for i in range(21))
# The most integer values tried for a count threshold.
MAX_INTEGER_CANDIDATES = 200

ENGINE = "engine"
MID, AFTER = "mid_execution", "after_workflow"


@dataclass(frozen=True, slots=True)
class Threshold:
    name: str
    source: str  # whose output it thresholds: "engine", judged.LLM or judged.VERIFIER
    phases: tuple[str, ...] = (MID, AFTER)
    integer: bool = False
    # Whether the policy uses it, beyond being set (a top-N size only matters in top_n mode).
    used: Callable[[dict], bool] = lambda rules: True


THRESHOLDS: tuple[Threshold, ...] = (
    Threshold("min_grounding_score", ENGINE, (MID,)),
    Threshold("score_relevance_floor", ENGINE, (MID,)),
    Threshold("score_top_n", ENGINE, (MID,), integer=True, used=lambda r: r.get("score_eval_mode") == "top_n"),
    Threshold("max_score_inflation", ENGINE, (MID,)),
    Threshold(
        "score_audit_min_samples",
        ENGINE,
        (MID,),
        integer=True,
        used=lambda r: r.get("max_score_inflation") is not None,
    ),
    Threshold("max_citations", ENGINE, (MID, AFTER), integer=True),
    Threshold("min_citations", ENGINE, (AFTER,), integer=True),
    Threshold("max_unsupported_claims", ENGINE, (AFTER,), integer=True),
    Threshold("abstention_threshold", ENGINE, (AFTER,)),
    Threshold("llm_grounding_threshold", judged.LLM, used=lambda r: bool(r.get("llm_grounding_check"))),
    Threshold("entailment_threshold", judged.VERIFIER, used=lambda r: bool(r.get("nli_check"))),
    Threshold("contradiction_threshold", judged.VERIFIER, used=lambda r: bool(r.get("nli_check"))),
    Threshold("max_unverifiable_ratio", judged.VERIFIER, used=lambda r: bool(r.get("nli_check"))),
)
NOT_THRESHOLDS = {"score_audit_rate": "A sampling rate: it decides how often reports are audited, not a violation."}


@dataclass(frozen=True, slots=True)
class Reviewed:
    confirmed: bool
    action: str
    phase: str
    source: str
    state: RunState | None = None  # engine violations: the state the decision was made on
    score: float | None = None  # LLM judge violations: the judge's score
    verification: dict | None = None  # verifier violations: the stored verification (claims)


def _precision(reviewed: Sequence[Reviewed], action: str) -> dict:
    mine = [r for r in reviewed if r.action == action]
    confirmed = sum(1 for r in mine if r.confirmed)
    return {
        "reviewed": len(mine),
        "confirmed": confirmed,
        "precision": round(confirmed / len(mine), 4) if mine else None,
    }


def _has_input(threshold: Threshold, item: Reviewed) -> bool:
    if item.source != threshold.source:
        return False
    if threshold.source == ENGINE:
        if item.state is None or item.phase not in threshold.phases:
            return False
        if threshold.name in ("max_score_inflation", "score_audit_min_samples"):
            return item.state.score_inflation is not None
        return True
    if threshold.source == judged.LLM:
        return item.score is not None
    return item.verification is not None


def _violates(category, threshold: Threshold, rules: dict, item: Reviewed) -> bool:
    if threshold.source == judged.LLM:
        return judged.llm_verdict(rules, item.score)[0] != "allow"
    if threshold.source == judged.VERIFIER:
        return judged.verifier_rethreshold(rules, item.verification)[0] != "allow"
    check = category.check(item.phase)
    return check is not None and check(rules, item.state)[0] != "allow"


def _integer_candidates(category, threshold: Threshold, current: int, items: Sequence[Reviewed]) -> list[int]:
    """The rule's minimum (0, or 1 where 0 is refused) up to one past the largest count the
    violations show."""
    spec = next(s for s in category.rules if s.name == threshold.name)
    low = int(spec.minimum or 0)
    seen = [current]
    for item in items:
        state = item.state
        seen += [len(state.citations), len(state.unsupported_claims), len(state.grounding_scores)]
        seen.append(state.score_audit_samples)
    high = min(max(seen) + 1, low + MAX_INTEGER_CANDIDATES - 1)
    return sorted({*range(low, high + 1), current})


def _suggest(category, threshold: Threshold, rules: dict, items: Sequence[Reviewed]) -> dict:
    name = threshold.name
    current = rules[name]
    confirmed = sum(1 for i in items if i.confirmed)
    dismissed = len(items) - confirmed

    def tally(value):
        changed = {**rules, name: value}
        kept = dropped = 0
        for item in items:
            violates = _violates(category, threshold, changed, item)
            if item.confirmed and violates:
                kept += 1
            elif not item.confirmed and not violates:
                dropped += 1
        return kept, dropped

    if threshold.integer:
        candidates = _integer_candidates(category, threshold, current, items)
    else:
        candidates = sorted({*GRID, current})
    scored = [(value, *tally(value)) for value in candidates]
    # The best trade; on a tie the value nearest the current one (the smallest change).
    best = max(scored, key=lambda row: (row[1] + row[2], -abs(row[0] - current)))
    now = next(row for row in scored if row[0] == current)
    return {
        "rule": name,
        "source": threshold.source,
        "current": current,
        "suggested": best[0],
        "reviewed": len(items),
        "confirmed": confirmed,
        "dismissed": dismissed,
        "kept_confirmed": best[1],
        "dropped_dismissed": best[2],
        "current_kept_confirmed": now[1],
        "current_dropped_dismissed": now[2],
    }


def _why_not(threshold: Threshold, reviewed: Sequence[Reviewed]) -> str:
    mine = [
        r
        for r in reviewed
        if r.source == threshold.source and (threshold.source != ENGINE or r.phase in threshold.phases)
    ]
    if not mine:
        where = " or ".join(threshold.phases) if threshold.source == ENGINE else f"the {threshold.source} judge"
        return f"No reviewed violation comes from {where}."
    return "The reviewed violations it could decide were stored without its input."


def calibrate(*, category_name: str, rules: dict, reviewed: Sequence[Reviewed]) -> dict:
    """Counts, precision of blocks and warnings, and one suggestion per numeric threshold in use."""
    category = get_category(category_name)
    confirmed = sum(1 for r in reviewed if r.confirmed)
    body = {
        "reviewed": len(reviewed),
        "confirmed": confirmed,
        "dismissed": len(reviewed) - confirmed,
        "blocks": _precision(reviewed, "block"),
        "warnings": _precision(reviewed, "warn"),
        "minimum_reviewed": MIN_REVIEWED,
        "thresholds": [],
        "not_calibrated": [],
        "message": None,
    }
    if len(reviewed) < MIN_REVIEWED:
        body["message"] = (
            f"Suggestions need at least {MIN_REVIEWED} reviewed violations; this policy has {len(reviewed)}."
        )
        return body
    for threshold in THRESHOLDS:
        if rules.get(threshold.name) is None or not threshold.used(rules):
            continue
        items = [r for r in reviewed if _has_input(threshold, r)]
        if items:
            body["thresholds"].append(_suggest(category, threshold, rules, items))
        else:
            body["not_calibrated"].append({"rule": threshold.name, "reason": _why_not(threshold, reviewed)})
    for name, reason in NOT_THRESHOLDS.items():
        if rules.get(name) is not None:
            body["not_calibrated"].append({"rule": name, "reason": reason})
    return body
