"""Replay (issue 11 item 2), the pure part: what would a set of policies have decided on past runs?

The caller (governance/replay.py) streams each stored run with its grounding reports in order;
this module rebuilds the engine's view of the run the way the write paths do
(governance/services.py) and asks the same engine (``evaluate_phase``) twice per decision: once
with the enforced policies as they are ("before") and once with the candidate in place ("after").

Re-evaluated, per decision:

- before_workflow, once per run: the engine on the empty state the run start decides on (the
  start context is the run's agent, which picks the policies); worked out once per agent.
- mid_execution, per report: that report's scores, citations and output; the unsupported claims
  and sources of every report so far, and the results of the run's retrieval spans recorded
  before the report (governance/retrieval.py, as the live path resolves citations); the latest
  output confidence reported so far; the agent's score audit as it was read for the report.
- after_workflow, for a run that completed without error: everything accumulated, every
  retrieval result, the run's final output.

Judges are re-thresholded, never re-run (policies/judged.py): for each policy that asks for a
judge at the phase, the judge's stored output at that decision is judged again with the policy's
rules: the LLM judge's score (reused when it was asked with the same model and criteria) against
``llm_grounding_threshold``; the verifier's per-claim probabilities against
``entailment_threshold``, ``contradiction_threshold`` and ``max_unverifiable_ratio``; the
consistency check's stored pairs with the policy's action. A judge with nothing stored at that
decision (it was never asked there, or its provider failed) is left out of both sides and counted
in ``judges_missing``; reused ones in ``judges_reused``. No Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from core.vocabulary import ACTIONS, SEVERITY

from . import judged
from .engine import Decision, Evaluation, PolicySpec, RunState, combine, evaluate_phase
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
    # The agent's score audit the engine read for the report ({"inflation", "samples"}) or None.
    score_inflation: dict | None
    sources: Sequence


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: int
    agent_name: str
    reports: Sequence[ReportRow]
    # The after_workflow audit ran (completed without error): replay it with this output.
    completed: bool = False
    output: str = ""
    # The run's retrieval results ({"id", "text", "span_id"}), oldest first, and for each report
    # how many of them had been recorded when it came (None: all of them).
    retrieved: Sequence[dict] = ()
    retrieved_before: Sequence[int] | None = None
    # Stored judge outputs per decision, keyed (phase, report index or None): see ``Judged``.
    judged: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Judged:
    """What the judges stored at one decision: LLM scores as (policy id, model, criteria or None,
    score), the verifier's metadata, the consistency check's metadata."""

    llm: tuple = ()
    verifier: dict | None = None
    consistency: dict | None = None


@dataclass
class Summary:
    reports: int = 0
    runs: int = 0
    before: dict = field(default_factory=lambda: dict.fromkeys(ACTION_KEYS, 0))
    after: dict = field(default_factory=lambda: dict.fromkeys(ACTION_KEYS, 0))
    changed_runs: int = 0
    changed: list = field(default_factory=list)
    judges_reused: int = 0
    judges_missing: int = 0

    def to_dict(self) -> dict:
        return {
            "reports": self.reports,
            "runs": self.runs,
            "before": dict(self.before),
            "after": dict(self.after),
            "changed_runs": self.changed_runs,
            "changed": list(self.changed),
            "judges_reused": self.judges_reused,
            "judges_missing": self.judges_missing,
        }

    def merge(self, other: Summary) -> None:
        self.reports += other.reports
        self.runs += other.runs
        for key in ACTION_KEYS:
            self.before[key] += other.before[key]
            self.after[key] += other.after[key]
        self.changed_runs += other.changed_runs
        self.changed += other.changed[: max(0, CHANGED_LIMIT - len(self.changed))]
        self.judges_reused += other.judges_reused
        self.judges_missing += other.judges_missing


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


def _judge_evaluation(spec: PolicySpec, phase: str, kind: str, stored: Judged | None) -> Evaluation | None:
    """The judge's stored output at this decision under ``spec``'s rules; None when nothing usable
    is stored."""
    if stored is None:
        return None
    rules = spec.rules
    if kind == judged.LLM:
        model, criteria = rules.get("llm_grounding_model"), rules.get("llm_grounding_criteria") or ""
        score = None
        for policy_id, stored_model, stored_criteria, stored_score in stored.llm:
            same_ask = stored_model == model and (
                stored_criteria == criteria if stored_criteria is not None else policy_id == spec.id
            )
            if same_ask:
                score = stored_score
                break
        if score is None:
            return None
        action, reason, threshold = judged.llm_verdict(rules, score)
        metadata = {"score": judged.round_score(score), "threshold": threshold, "replayed": "stored score"}
        source = judged.LLM
    elif kind == judged.VERIFIER:
        if stored.verifier is None:
            return None
        verification = stored.verifier.get("verification")
        if isinstance(verification, dict):
            action, reason, metadata = judged.verifier_rethreshold(rules, verification)
        else:  # skipped (no sources, a failure): it allowed, whatever the thresholds
            action, reason, metadata = "allow", "Verifier skipped (stored)", {}
        source = judged.VERIFIER
    else:
        if stored.consistency is None:
            return None
        action, reason = judged.consistency_verdict(rules, stored.consistency)
        metadata, source = {}, judged.VERIFIER
    response = (rules.get("abstention_response") or None) if action == "block" else None
    return Evaluation(
        spec.id, spec.name, spec.category, spec.version, phase, action, reason, metadata, response, source, False
    )


class Replayer:
    """Replays runs under two policy sets; per-agent policy lists are worked out once."""

    def __init__(self, before: Sequence[PolicySpec], after: Sequence[PolicySpec]):
        self._before = tuple(before)
        self._after = tuple(after)
        self._for_agent: dict[str, tuple] = {}
        self.summary = Summary()

    def _specs(self, agent: str):
        """(before, after, union, before's positions in union, after's positions, judges, start)
        for an agent.

        Before and after share every policy but the candidate, so each policy of the union is
        evaluated once per decision and the two decisions are combined from those evaluations.
        ``judges``: {phase: ((position in union, spec, kind), ...)} for the policies asking for a
        judge; ``start``: the two before_workflow decisions (the state is empty, so they depend on
        the agent only).
        """
        found = self._for_agent.get(agent)
        if found is None:
            before = tuple(applicable_policies(self._before, agent))
            after = tuple(applicable_policies(self._after, agent))
            union = (*before, *(spec for spec in after if spec not in before))
            judges = {
                phase: tuple(
                    (i, spec, kind) for i, spec in enumerate(union) for kind in judged.kinds_for(spec.rules, phase)
                )
                for phase in ("mid_execution", "after_workflow")
            }
            empty = RunState()
            start = (evaluate_phase("before_workflow", before, empty), evaluate_phase("before_workflow", after, empty))
            found = self._for_agent[agent] = (
                before,
                after,
                union,
                tuple(union.index(s) for s in before),
                tuple(union.index(s) for s in after),
                judges,
                start,
            )
        return found

    def _count(self, run_id: int, phase: str, old, new) -> bool:
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

    def _decide(self, run_id: int, phase: str, specs, state: RunState, stored: Judged | None) -> bool:
        before, after, union, in_before, in_after, judges, _ = specs
        evaluations = evaluate_phase(phase, union, state).evaluations
        if len(evaluations) == len(union):
            old = combine(phase, [evaluations[i] for i in in_before])
            new = combine(phase, [evaluations[i] for i in in_after])
        else:  # a category that does not run at this phase: positions no longer line up
            old = evaluate_phase(phase, before, state)
            new = evaluate_phase(phase, after, state)
        asked = judges.get(phase)
        if asked:
            old, new = self._with_judges(phase, asked, union, in_before, in_after, old, new, stored)
        return self._count(run_id, phase, old, new)

    def _with_judges(self, phase, asked, union, in_before, in_after, old, new, stored):
        by_position: dict[int, list] = {}
        for position, spec, kind in asked:
            evaluation = _judge_evaluation(spec, phase, kind, stored)
            if evaluation is None:
                self.summary.judges_missing += 1
            else:
                self.summary.judges_reused += 1
                by_position.setdefault(position, []).append(evaluation)
        if not by_position:
            return old, new
        extra_old = [e for i in in_before for e in by_position.get(i, ())]
        extra_new = [e for i in in_after for e in by_position.get(i, ())]
        return combine(phase, (*old.evaluations, *extra_old)), combine(phase, (*new.evaluations, *extra_new))

    def run(self, row: RunRow) -> None:
        specs = self._specs(row.agent_name)
        summary = self.summary
        summary.runs += 1
        summary.reports += len(row.reports)
        old_start, new_start = specs[6]
        changed = self._count(row.run_id, "before_workflow", old_start, new_start)
        judged_at = row.judged
        for phase, index, state in decision_states(row):
            changed |= self._decide(
                row.run_id, phase, specs, state, judged_at.get((phase, index)) if judged_at else None
            )
        if changed:
            summary.changed_runs += 1


def decision_states(row: RunRow):
    """(phase, report index or None, RunState) for each decision of the run the engine made after
    its start, in order: the state the write path built for it (see the module docstring)."""
    claims: list = []
    sources: list = []
    citations: list = []
    confidence = None
    retrieved, visible = row.retrieved, row.retrieved_before
    for index, report in enumerate(row.reports):
        claims += report.unsupported_claims
        sources += report.sources
        citations += report.citations
        if report.output_confidence is not None:
            confidence = report.output_confidence
        citable = tuple(sources)
        if retrieved:
            seen = retrieved if visible is None else retrieved[: visible[index]]
            citable = (*citable, *seen)
        audit = report.score_inflation
        yield (
            "mid_execution",
            index,
            RunState(
                tuple(report.grounding_scores),
                tuple(report.citations),
                tuple(claims),
                confidence,
                report.output or None,
                citable,
                audit.get("inflation") if audit else None,
                audit.get("samples", 0) if audit else 0,
            ),
        )
    if row.completed:
        yield (
            "after_workflow",
            None,
            RunState((), tuple(citations), tuple(claims), confidence, row.output or None, (*sources, *retrieved)),
        )


def replay(runs: Iterable[RunRow], *, before: Sequence[PolicySpec], after: Sequence[PolicySpec]) -> Summary:
    replayer = Replayer(before, after)
    for row in runs:
        replayer.run(row)
    return replayer.summary


# --- Several candidate sets at once (a plan of policy files, docs/policies-as-code.md) ------------


@dataclass
class Impact:
    """What one candidate set changes: decisions whose action differs, by ``before→after``, with the
    first CHANGED_LIMIT of them (the examples)."""

    decisions: int = 0
    changed_decisions: int = 0
    changed_runs: int = 0
    transitions: dict = field(default_factory=dict)
    changed: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "decisions": self.decisions,
            "changed_decisions": self.changed_decisions,
            "changed_runs": self.changed_runs,
            "transitions": dict(sorted(self.transitions.items())),
            "examples": list(self.changed),
        }


class PlanReplayer:
    """Replays runs under the enforced policies and several candidate sets at once: each change of a
    plan alone, and all of them together.

    The same states (``decision_states``), engine and judge re-thresholding as ``Replayer``; what it
    adds is sharing. Every policy of the union of all sets is evaluated once per decision; a set's
    action is then the most severe action among its members (``combine``'s rule), worked out from
    per-level counts in time proportional to how much the set differs from the enforced one, so
    fifty candidates cost about what one does. A decision whose action changes is combined in full
    for its reason. A set that is the same as the enforced one for a run's agent is skipped for it.
    """

    def __init__(self, before: Sequence[PolicySpec], afters: Sequence[Sequence[PolicySpec]]):
        self._before = tuple(before)
        self._afters = tuple(tuple(after) for after in afters)
        self._for_agent: dict[str, tuple] = {}
        self.impacts = [Impact() for _ in self._afters]
        self.runs = 0
        self.reports = 0
        self.decisions = 0
        self.judges_reused = 0
        self.judges_missing = 0

    def _specs(self, agent: str):
        found = self._for_agent.get(agent)
        if found is not None:
            return found
        before = applicable_policies(self._before, agent)
        union: list[PolicySpec] = list(before)
        in_before = tuple(range(len(before)))
        sets = []  # (index of the set, removed positions, added positions, the set's positions)
        for n, after_all in enumerate(self._afters):
            after = applicable_policies(after_all, agent)
            if after == before:
                continue
            positions = []
            for spec in after:
                try:
                    positions.append(next(i for i, known in enumerate(union) if known is spec))
                except StopIteration:
                    union.append(spec)
                    positions.append(len(union) - 1)
            kept = set(positions)
            removed = tuple(i for i in in_before if i not in kept)
            added = tuple(i for i in positions if i >= len(before))
            sets.append((n, removed, added, tuple(positions)))
        judges = {
            phase: tuple(
                (i, spec, kind) for i, spec in enumerate(union) for kind in judged.kinds_for(spec.rules, phase)
            )
            for phase in ("mid_execution", "after_workflow")
        }
        found = self._for_agent[agent] = (tuple(union), in_before, tuple(sets), judges)
        return found

    def _decide(self, run_id: int, phase: str, specs, state: RunState, stored: Judged | None, changed: set) -> None:
        union, in_before, sets, judges = specs
        self.decisions += 1
        for impact in self.impacts:
            impact.decisions += 1
        if not sets:
            return
        evaluations = list(evaluate_phase(phase, union, state).evaluations)
        if len(evaluations) != len(union):  # a category that does not run at this phase
            self._decide_slowly(run_id, phase, specs, state, changed)
            return
        extra: dict[int, list] = {}
        for position, spec, kind in judges.get(phase, ()):
            evaluation = _judge_evaluation(spec, phase, kind, stored)
            if evaluation is None:
                self.judges_missing += 1
            else:
                self.judges_reused += 1
                extra.setdefault(position, []).append(evaluation)
        level = [SEVERITY[e.action] for e in evaluations]
        for position, found in extra.items():
            level[position] = max(level[position], *(SEVERITY[e.action] for e in found))
        counts = [0, 0, 0]
        for i in in_before:
            counts[level[i]] += 1
        old_action = _worst(counts)
        old = None
        for n, removed, added, positions in sets:
            after = list(counts)
            for i in removed:
                after[level[i]] -= 1
            for i in added:
                after[level[i]] += 1
            new_action = _worst(after)
            if new_action == old_action:
                continue
            if old is None:
                old = _combined(phase, evaluations, extra, in_before)
            new = _combined(phase, evaluations, extra, positions)
            self._count(n, run_id, phase, old, new, changed)

    def _decide_slowly(self, run_id: int, phase: str, specs, state: RunState, changed: set) -> None:
        union, in_before, sets, _ = specs
        old = evaluate_phase(phase, [union[i] for i in in_before], state)
        for n, _, _, positions in sets:
            new = evaluate_phase(phase, [union[i] for i in positions], state)
            if new.action != old.action:
                self._count(n, run_id, phase, old, new, changed)

    def _count(self, n: int, run_id: int, phase: str, old, new, changed: set) -> None:
        impact = self.impacts[n]
        impact.changed_decisions += 1
        key = f"{old.action}→{new.action}"
        impact.transitions[key] = impact.transitions.get(key, 0) + 1
        changed.add(n)
        if len(impact.changed) < EXAMPLES_LIMIT:
            impact.changed.append(
                {
                    "run_id": run_id,
                    "phase": phase,
                    "before": old.action,
                    "after": new.action,
                    "reason": new.reason if new.action != "allow" else old.reason,
                }
            )

    def run(self, row: RunRow) -> None:
        specs = self._specs(row.agent_name)
        self.runs += 1
        self.reports += len(row.reports)
        changed: set[int] = set()
        self._decide(row.run_id, "before_workflow", specs, RunState(), None, changed)
        judged_at = row.judged
        for phase, index, state in decision_states(row):
            stored = judged_at.get((phase, index)) if judged_at else None
            self._decide(row.run_id, phase, specs, state, stored, changed)
        for n in changed:
            self.impacts[n].changed_runs += 1


EXAMPLES_LIMIT = 5


def _worst(counts: list[int]) -> str:
    for level in (2, 1):
        if counts[level]:
            return ACTIONS[level]
    return "allow"


def _combined(phase: str, evaluations: list, extra: dict, positions) -> Decision:
    chosen = [evaluations[i] for i in positions]
    chosen += [e for i in positions for e in extra.get(i, ())]
    return combine(phase, chosen)
