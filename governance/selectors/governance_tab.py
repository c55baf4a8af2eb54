"""A run: the Governance tab, a compact table of every evaluation, grouped by phase and decision.

Above it, a policy x phase summary (the most severe action each policy took at each phase, with
counts). Rows that only record a policy's stored rules at before_workflow are folded into one line per
decision. A decision several policies spoke in names each policy beside its reason.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import F

from core.vocabulary import SEVERITY

from ..models import Action, Decision, Evaluation, Phase, Run

PHASE_ORDER = (Phase.BEFORE, Phase.MID, Phase.AFTER)
PHASE_LABELS = {
    Phase.BEFORE: "when the run started",
    Phase.MID: "on each grounding report",
    Phase.AFTER: "when the run completed",
}


def only_stores_rules(e: Evaluation) -> bool:
    """An allow at before_workflow that says nothing but the rules it stored (grounding's "Grounding rules
    stored"): noise in the table, folded away."""
    return e.phase == Phase.BEFORE and e.action == Action.ALLOW and set(e.metadata or {}) <= {"rules"}


@dataclass
class DecisionView:
    decision: Decision | None
    evaluations: list[Evaluation]
    folded: list[Evaluation] = field(default_factory=list)

    @property
    def phase(self) -> str:
        if self.decision:
            return self.decision.phase
        return (self.evaluations or self.folded)[0].phase

    @property
    def named_reason(self) -> str:
        """The decision's reason, each part prefixed with its policy's name where several policies spoke:
        the reasons of the evaluations that set the final action, in policy order (as `reason` is built)."""
        if self.decision is None:
            return ""
        if self.folded and not self.evaluations:
            # Every policy only stored its rules: the same words once, not once a policy.
            return "; ".join(dict.fromkeys(e.reason for e in self.folded if e.reason)) or self.decision.reason
        deciding = [e for e in self.evaluations if e.action == self.decision.action and e.reason]
        if len({e.policy_name for e in self.evaluations + self.folded}) < 2 or not deciding:
            return self.decision.reason
        return "; ".join(f"{e.policy_name}: {e.reason}" for e in deciding)


@dataclass
class SummaryCell:
    action: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, action: str) -> None:
        self.counts[action] = self.counts.get(action, 0) + 1
        if self.action is None or SEVERITY[action] > SEVERITY[self.action]:
            self.action = action

    @property
    def parts(self) -> list[tuple[str, int]]:
        return [(a, self.counts[a]) for a in (Action.BLOCK, Action.WARN, Action.ALLOW) if a in self.counts]


@dataclass
class PolicySummary:
    policy_name: str
    policy_id: int | None
    cells: list[SummaryCell]


def governance_summary(evaluations: Iterable[Evaluation]) -> tuple[list[str], list[PolicySummary]]:
    """(phases that have evaluations, one row per policy in order of first appearance with a cell per phase)."""
    enforced = [e for e in evaluations if not e.shadow]
    phases = [p for p in PHASE_ORDER if any(e.phase == p for e in enforced)]
    rows: dict[str, PolicySummary] = {}
    for e in enforced:
        row = rows.setdefault(e.policy_name, PolicySummary(e.policy_name, e.policy_id, [SummaryCell() for _ in phases]))
        row.cells[phases.index(e.phase)].add(e.action)
    return [str(p) for p in phases], list(rows.values())


@dataclass
class PhaseGroup:
    phase: str
    decisions: list[DecisionView]

    @property
    def label(self) -> str:
        return PHASE_LABELS.get(self.phase, "")

    @property
    def evaluation_count(self) -> int:
        return sum(len(d.evaluations) + len(d.folded) for d in self.decisions)


def _run_evaluations(run: Run) -> list[Evaluation]:
    return list(Evaluation.objects.filter(run=run).select_related("reviewed_by").order_by("id"))


def _decision_views(decisions: Iterable[Decision], evaluations: Iterable[Evaluation]) -> list[DecisionView]:
    by_decision: dict[int | None, list[Evaluation]] = defaultdict(list)
    for e in evaluations:
        if not e.shadow:  # shadow verdicts are listed apart (run_shadow_violations), never with the decision
            by_decision[e.decision_id].append(e)
    views = []
    for d in decisions:
        said = by_decision.pop(d.id, [])
        views.append(
            DecisionView(d, [e for e in said if not only_stores_rules(e)], [e for e in said if only_stores_rules(e)])
        )
    # Evaluations without a decision row (none are written today, but the column allows it).
    views += [DecisionView(None, [e]) for e in by_decision.pop(None, [])]
    return views


@dataclass
class GovernanceTab:
    phases: list[PhaseGroup]
    summary_phases: list[str]
    summary: list[PolicySummary]

    def __bool__(self) -> bool:
        return bool(self.phases)

    def __iter__(self):
        return iter(self.phases)


def run_governance(*, run: Run) -> GovernanceTab:
    """Every decision of the run with its evaluations, grouped by phase in workflow order, and the
    policy x phase summary. Two queries."""
    decisions = list(Decision.objects.filter(run=run).annotate(report_seq=F("report__seq")).order_by("id"))
    evaluations = _run_evaluations(run)
    views = _decision_views(decisions, evaluations)
    groups = []
    for phase in PHASE_ORDER:
        in_phase = [v for v in views if v.phase == phase]
        if in_phase:
            groups.append(PhaseGroup(phase=phase, decisions=in_phase))
    summary_phases, summary = governance_summary(evaluations)
    return GovernanceTab(phases=groups, summary_phases=summary_phases, summary=summary)


def run_shadow_violations(*, run: Run) -> list[Evaluation]:
    """What shadow policies would have warned or blocked in this run, oldest first. One query."""
    return list(Evaluation.objects.filter(run=run, shadow=True, action__in=(Action.WARN, Action.BLOCK)).order_by("id"))
