"""The pure evaluation engine: policies and run state in, a decision out. No DB, no I/O.

The services layer loads the policies that apply to an agent (``policies.scope``), builds a
``RunState`` and calls ``evaluate_phase``. When it adds evaluations of its own (the LLM judge,
the local verifier) it calls ``combine`` again on the longer list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.vocabulary import ACTIONS, PHASES, SEVERITY

from .categories import get_category
from .categories.base import (
    Check,
    Outcome,
    RunState,
    fast_constructor,
)

__all__ = [
    "ACTIONS",
    "PHASES",
    "Decision",
    "Evaluation",
    "Outcome",
    "PolicySpec",
    "RunState",
    "combine",
    "evaluate_phase",
]

NO_APPLICABLE_POLICIES = "No applicable policies"

# Only reached when every evaluation that set the final action came without a reason
# (an evaluation appended by the services layer, say): a decision always explains itself.
_FALLBACK_REASONS = {
    "allow": "Allowed",
    "warn": "Warned by policy",
    "block": "Blocked by policy",
}


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """One enabled policy as the engine sees it. ``rules`` are the effective rules."""

    id: int
    name: str
    category: str
    version: int
    rules: dict
    agents: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: dict) -> PolicySpec:
        """The inverse of `dataclasses.asdict`, as a spec travels to a Celery task."""
        return cls(**{**data, "agents": tuple(data.get("agents") or ())})


@dataclass(frozen=True, slots=True)
class Evaluation:
    policy_id: int
    policy_name: str
    category: str
    policy_version: int
    phase: str
    action: str
    reason: str
    metadata: dict
    abstention_response: str | None = None
    source: str = "engine"

    def to_dict(self) -> dict:
        data = {
            "policy_id": self.policy_id,
            "policy_name": self.policy_name,
            "category": self.category,
            "phase": self.phase,
            "action": self.action,
            "reason": self.reason,
            "metadata": self.metadata,
        }
        if self.source != "engine":
            data["source"] = self.source
        return data


@dataclass(frozen=True, slots=True)
class Decision:
    action: str
    phase: str
    reason: str
    evaluations: tuple[Evaluation, ...]
    abstention_response: str | None = None

    def to_dict(self) -> dict:
        data: dict[str, object] = {"action": self.action, "phase": self.phase, "reason": self.reason}
        if self.abstention_response is not None:
            data["abstention_response"] = self.abstention_response
        data["evaluations"] = [evaluation.to_dict() for evaluation in self.evaluations]
        return data


_new_evaluation = fast_constructor(Evaluation)
_new_decision = fast_constructor(Decision)
_PHASE_SET = frozenset(PHASES)


def evaluate_phase(phase: str, policies: Sequence[PolicySpec], state: RunState) -> Decision:
    """Run every policy (already filtered for the agent, in policy order) and combine."""
    if phase not in _PHASE_SET:
        raise ValueError(f"Unknown phase: {phase!r}")
    evaluations: list[Evaluation] = []
    append = evaluations.append
    checks: dict[str, Check | None] = {}
    for policy in policies:
        category_name = policy.category
        try:
            check = checks[category_name]
        except KeyError:
            check = checks[category_name] = get_category(category_name).check(phase)
        if check is None:
            continue
        try:
            action, reason, metadata, abstention_response = check(policy.rules, state)
        except KeyError:
            # Rules stored before a rule was added: evaluate() fills in the defaults.
            outcome = get_category(category_name).evaluate(phase, policy.rules, state)
            action, reason, metadata, abstention_response = (
                outcome.action,
                outcome.reason,
                outcome.metadata,
                outcome.abstention_response,
            )
        append(
            _new_evaluation(
                policy.id,
                policy.name,
                category_name,
                policy.version,
                phase,
                action,
                reason,
                metadata,
                abstention_response,
                "engine",
            )
        )
    return _combine(phase, tuple(evaluations))


def combine(phase: str, evaluations: Sequence[Evaluation]) -> Decision:
    """The most severe action wins (block > warn > allow).

    The reason joins, in order, the reasons of the evaluations that set the final action.
    A block carries the first abstention_response among the blocking evaluations.
    """
    if phase not in _PHASE_SET:
        raise ValueError(f"Unknown phase: {phase!r}")
    evaluations = tuple(evaluations)
    for evaluation in evaluations:
        if evaluation.action not in SEVERITY:
            raise ValueError(f"Unknown action: {evaluation.action!r}")
    return _combine(phase, evaluations)


def _combine(phase: str, evaluations: tuple[Evaluation, ...]) -> Decision:
    if not evaluations:
        return _new_decision("allow", phase, NO_APPLICABLE_POLICIES, evaluations, None)
    severity = SEVERITY
    worst = 0
    for evaluation in evaluations:
        level = severity[evaluation.action]
        if level > worst:
            worst = level
    final = ACTIONS[worst]
    reasons = [e.reason for e in evaluations if e.action == final and e.reason]
    abstention_response = None
    if final == "block":
        for evaluation in evaluations:
            if evaluation.action == "block" and evaluation.abstention_response is not None:
                abstention_response = evaluation.abstention_response
                break
    reason = "; ".join(reasons) or _FALLBACK_REASONS[final]
    return _new_decision(final, phase, reason, evaluations, abstention_response)
