"""A run: the Governance tab, every decision with its evaluations, grouped by phase."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import F

from ..models import Action, Decision, Evaluation, Phase, Run

PHASE_ORDER = (Phase.BEFORE, Phase.MID, Phase.AFTER)
PHASE_LABELS = {
    Phase.BEFORE: "when the run started",
    Phase.MID: "on each grounding report",
    Phase.AFTER: "when the run completed",
}


@dataclass
class DecisionView:
    decision: Decision | None
    evaluations: list[Evaluation]

    @property
    def phase(self) -> str:
        return self.decision.phase if self.decision else self.evaluations[0].phase


@dataclass
class PhaseGroup:
    phase: str
    decisions: list[DecisionView]

    @property
    def label(self) -> str:
        return PHASE_LABELS.get(self.phase, "")

    @property
    def evaluation_count(self) -> int:
        return sum(len(d.evaluations) for d in self.decisions)


def _run_evaluations(run: Run) -> list[Evaluation]:
    return list(Evaluation.objects.filter(run=run).select_related("reviewed_by").order_by("id"))


def _decision_views(decisions: Iterable[Decision], evaluations: Iterable[Evaluation]) -> list[DecisionView]:
    by_decision: dict[int | None, list[Evaluation]] = defaultdict(list)
    for e in evaluations:
        if not e.shadow:  # shadow verdicts are listed apart (run_shadow_violations), never with the decision
            by_decision[e.decision_id].append(e)
    views = [DecisionView(d, by_decision.pop(d.id, [])) for d in decisions]
    # Evaluations without a decision row (none are written today, but the column allows it).
    views += [DecisionView(None, [e]) for e in by_decision.pop(None, [])]
    return views


def run_governance(*, run: Run) -> list[PhaseGroup]:
    """Every decision of the run with its evaluations, grouped by phase in workflow order. Two queries."""
    decisions = list(Decision.objects.filter(run=run).annotate(report_seq=F("report__seq")).order_by("id"))
    views = _decision_views(decisions, _run_evaluations(run))
    groups = []
    for phase in PHASE_ORDER:
        in_phase = [v for v in views if v.phase == phase]
        if in_phase:
            groups.append(PhaseGroup(phase=phase, decisions=in_phase))
    return groups


def run_shadow_violations(*, run: Run) -> list[Evaluation]:
    """What shadow policies would have warned or blocked in this run, oldest first. One query."""
    return list(Evaluation.objects.filter(run=run, shadow=True, action__in=(Action.WARN, Action.BLOCK)).order_by("id"))
