"""Calibration from reviewers (issue 11 item 4), the pure part.

Reviewers confirm or dismiss violations. For each numeric threshold a policy uses, this finds the
value that would have kept the most confirmed violations while dropping the most dismissed ones,
by re-judging each reviewed violation with the same engine under candidate values:

- engine thresholds (``min_grounding_score``, ``abstention_threshold``, ``score_relevance_floor``):
  the violation's decision state is rebuilt from the stored reports (policies/replay.py
  ``decision_states``) and the policy's check run again with the value changed;
- the LLM judge's ``llm_grounding_threshold``: the judge's stored score is compared with the value
  (a judge call is not repeated).

Verifier thresholds (``entailment_threshold``…) need the model and are not calibrated here. No
suggestion is made below MIN_REVIEWED reviewed violations. No Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .categories import get_category
from .engine import RunState

MIN_REVIEWED = 10
GRID = tuple(round(i * 0.05, 2) for i in range(21))
ENGINE_THRESHOLDS = {
    "min_grounding_score": "mid_execution",
    "score_relevance_floor": "mid_execution",
    "abstention_threshold": "after_workflow",
}
JUDGE_THRESHOLDS = {"llm_grounding_threshold": "llm"}


@dataclass(frozen=True, slots=True)
class Reviewed:
    confirmed: bool
    action: str
    phase: str
    source: str
    state: RunState | None = None  # engine violations: the state the decision was made on
    score: float | None = None  # judge violations: the judge's score


def _precision(reviewed: Sequence[Reviewed], action: str) -> dict:
    mine = [r for r in reviewed if r.action == action]
    confirmed = sum(1 for r in mine if r.confirmed)
    return {
        "reviewed": len(mine),
        "confirmed": confirmed,
        "precision": round(confirmed / len(mine), 4) if mine else None,
    }


def _uses(name: str, rules: dict) -> bool:
    if name == "llm_grounding_threshold":
        return bool(rules.get("llm_grounding_check"))
    if name == "score_relevance_floor":
        return rules.get(name) is not None
    return rules.get(name) is not None


def _violates(category, name: str, value: float, rules: dict, item: Reviewed) -> bool:
    if name in JUDGE_THRESHOLDS:
        return item.score is not None and item.score < value
    check = category.check(item.phase)
    return check is not None and check({**rules, name: value}, item.state)[0] != "allow"


def _suggest(category, name: str, rules: dict, items: Sequence[Reviewed]) -> dict:
    current = rules[name]
    confirmed = sum(1 for i in items if i.confirmed)
    dismissed = len(items) - confirmed

    def tally(value):
        kept = sum(1 for i in items if i.confirmed and _violates(category, name, value, rules, i))
        dropped = sum(1 for i in items if not i.confirmed and not _violates(category, name, value, rules, i))
        return kept, dropped

    candidates = sorted({*GRID, current})
    scored = [(value, *tally(value)) for value in candidates]
    # The best trade; on a tie the value nearest the current one (the smallest change).
    best = max(scored, key=lambda row: (row[1] + row[2], -abs(row[0] - current)))
    now = next(row for row in scored if row[0] == current)
    return {
        "rule": name,
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
        "message": None,
    }
    if len(reviewed) < MIN_REVIEWED:
        body["message"] = (
            f"Suggestions need at least {MIN_REVIEWED} reviewed violations; this policy has {len(reviewed)}."
        )
        return body
    for name, phase_or_source in {**ENGINE_THRESHOLDS, **JUDGE_THRESHOLDS}.items():
        if name not in rules or not _uses(name, rules):
            continue
        if name in JUDGE_THRESHOLDS:
            items = [r for r in reviewed if r.source == phase_or_source and r.score is not None]
        else:
            items = [r for r in reviewed if r.source == "engine" and r.phase == phase_or_source and r.state is not None]
        if items:
            body["thresholds"].append(_suggest(category, name, rules, items))
    return body
