"""Replay (issue 11 item 2), the pure part: what would a set of policies have decided on past runs?

The caller (governance/replay.py) streams each stored run with its grounding reports in order;
this module rebuilds the engine's view of the run the way the report write path does
(governance/services.py) and asks the same engine (``evaluate_phase``) twice per decision: once
with the enforced policies as they are ("before") and once with the candidate in place ("after").

- mid_execution, per report: that report's scores, citations and output; the unsupported claims
  and sources of every report so far; the latest output confidence reported so far.
- after_workflow, for a run that completed without error: everything accumulated, the run's
  final output.

Not replayed: before_workflow (grounding allows it whatever the rules), judges (LLM, verifier:
they are not pure and would cost a provider call per report) and retrieval-span results as
citation sources. No Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from .engine import PolicySpec, RunState, combine, evaluate_phase
from .scope import applicable_policies

CHANGED_LIMIT = 100
ACTION_KEYS = ("allow", "warn", "block")


class ReportRow(NamedTuple):
    """One stored report, in the column order the reads give (a tuple: 100,000 of them are built)."""

    grounding_scores: Sequence[float]
    citations: Sequence
    unsupported_claims: Sequence[str]
    output_confidence: float | None
    output: str
    sources: Sequence


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: int
    agent_name: str
    reports: Sequence[ReportRow]
    # The after_workflow audit ran (completed without error): replay it with this output.
    completed: bool = False
    output: str = ""


@dataclass
class Summary:
    reports: int = 0
    runs: int = 0
    before: dict = field(default_factory=lambda: dict.fromkeys(ACTION_KEYS, 0))
    after: dict = field(default_factory=lambda: dict.fromkeys(ACTION_KEYS, 0))
    changed_runs: int = 0
    changed: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "reports": self.reports,
            "runs": self.runs,
            "before": dict(self.before),
            "after": dict(self.after),
            "changed_runs": self.changed_runs,
            "changed": list(self.changed),
        }

    def merge(self, other: Summary) -> None:
        self.reports += other.reports
        self.runs += other.runs
        for key in ACTION_KEYS:
            self.before[key] += other.before[key]
            self.after[key] += other.after[key]
        self.changed_runs += other.changed_runs
        self.changed += other.changed[: max(0, CHANGED_LIMIT - len(self.changed))]


def with_candidate(enforced: Sequence[PolicySpec], candidate: PolicySpec) -> tuple[PolicySpec, ...]:
    """The enforced policies with the candidate in place of the policy of its id, or added last.

    The candidate is judged as enforcing whatever mode it is saved in: the point is to see what it
    would do if it decided.
    """
    candidate = replace(candidate, mode="enforce")
    if any(spec.id == candidate.id for spec in enforced):
        return tuple(candidate if spec.id == candidate.id else spec for spec in enforced)
    return (*enforced, candidate)


def enforced_only(specs: Iterable[PolicySpec]) -> tuple[PolicySpec, ...]:
    return tuple(spec for spec in specs if spec.mode != "shadow")


class Replayer:
    """Replays runs under two policy sets; per-agent policy lists are worked out once."""

    def __init__(self, before: Sequence[PolicySpec], after: Sequence[PolicySpec]):
        self._before = tuple(before)
        self._after = tuple(after)
        self._for_agent: dict[str, tuple[tuple, tuple]] = {}
        self.summary = Summary()

    def _specs(self, agent: str):
        """(before, after, union, before's positions in union, after's positions) for an agent.

        Before and after share every policy but the candidate, so each policy of the union is
        evaluated once per decision and the two decisions are combined from those evaluations.
        """
        found = self._for_agent.get(agent)
        if found is None:
            before = tuple(applicable_policies(self._before, agent))
            after = tuple(applicable_policies(self._after, agent))
            union = (*before, *(spec for spec in after if spec not in before))
            found = self._for_agent[agent] = (
                before,
                after,
                union,
                tuple(union.index(s) for s in before),
                tuple(union.index(s) for s in after),
            )
        return found

    def _decide(self, run_id: int, phase: str, specs, state: RunState) -> bool:
        before, after, union, in_before, in_after = specs
        evaluations = evaluate_phase(phase, union, state).evaluations
        if len(evaluations) == len(union):
            old = combine(phase, [evaluations[i] for i in in_before])
            new = combine(phase, [evaluations[i] for i in in_after])
        else:  # a category that does not run at this phase: positions no longer line up
            old = evaluate_phase(phase, before, state)
            new = evaluate_phase(phase, after, state)
        summary = self.summary
        summary.before[old.action] += 1
        summary.after[new.action] += 1
        if old.action == new.action:
            return False
        if len(summary.changed) < CHANGED_LIMIT:
            summary.changed.append(
                {
                    "run_id": run_id,
                    "phase": phase,
                    "before": old.action,
                    "after": new.action,
                    "reason": new.reason if new.action != "allow" else old.reason,
                }
            )
        return True

    def run(self, row: RunRow) -> None:
        specs = self._specs(row.agent_name)
        summary = self.summary
        summary.runs += 1
        summary.reports += len(row.reports)
        changed = False
        for phase, _, state in decision_states(row):
            changed |= self._decide(row.run_id, phase, specs, state)
        if changed:
            summary.changed_runs += 1


def decision_states(row: RunRow):
    """(phase, report index or None, RunState) for each decision of the run the engine made, in order:
    the state the report write path built for it (see the module docstring)."""
    claims: list = []
    sources: list = []
    citations: list = []
    confidence = None
    for index, report in enumerate(row.reports):
        claims += report.unsupported_claims
        sources += report.sources
        citations += report.citations
        if report.output_confidence is not None:
            confidence = report.output_confidence
        yield (
            "mid_execution",
            index,
            RunState(
                tuple(report.grounding_scores),
                tuple(report.citations),
                tuple(claims),
                confidence,
                report.output or None,
                tuple(sources),
            ),
        )
    if row.completed:
        yield (
            "after_workflow",
            None,
            RunState((), tuple(citations), tuple(claims), confidence, row.output or None, tuple(sources)),
        )


def replay(runs: Iterable[RunRow], *, before: Sequence[PolicySpec], after: Sequence[PolicySpec]) -> Summary:
    replayer = Replayer(before, after)
    for row in runs:
        replayer.run(row)
    return replayer.summary
