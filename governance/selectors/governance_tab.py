"""A run: the Governance tab, a compact table of the run's evaluations, grouped by phase and decision,
bounded however many the run holds (docs/dashboard.md#governance).

Above it, a policy x phase summary (the most severe action each policy took at each phase, with
counts), aggregated by the database over every evaluation. Below, a page of evaluations at a time
(EVALUATIONS_PER_PAGE, keyset on id) with their decisions. Rows that only record a policy's stored
rules at before_workflow are folded into one line, counted by the aggregate and never loaded. A
decision several policies spoke in names each policy beside its reason.

The rows come in id order: the services write a run's evaluations as its workflow goes (before_workflow
at the start, mid_execution on each report, after_workflow at the end), so id order is the phase
order, and an index on (run, id) reads a page from any point without counting what came before.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import BooleanField, Count, F, Func, Min, Q

from core.vocabulary import SEVERITY

from ..models import Action, Decision, Evaluation, Phase, Run

PHASE_ORDER = (Phase.BEFORE, Phase.MID, Phase.AFTER)
PHASE_LABELS = {
    Phase.BEFORE: "when the run started",
    Phase.MID: "on each grounding report",
    Phase.AFTER: "when the run completed",
}
EVALUATIONS_PER_PAGE = 50
SHADOW_SHOWN = 20  # the rest are on the violations list, filtered to the run


def only_stores_rules(e: Evaluation) -> bool:
    """An allow at before_workflow that says nothing but the rules it stored (grounding's "Grounding rules
    stored"): noise in the table, folded away. STORES_ONLY_RULES asks the database the same."""
    meta = e.metadata
    return (
        e.phase == Phase.BEFORE
        and e.action == Action.ALLOW
        and (meta is None or (isinstance(meta, dict) and set(meta) <= {"rules"}))
    )


class _MetadataOnlyRules(Func):
    """Whether `metadata` is JSON null or an object with no key but "rules" (only_stores_rules' test)."""

    output_field = BooleanField()
    template = (
        "CASE json_type(%(expressions)s) WHEN 'object' THEN json_remove(%(expressions)s, '$.rules') = '{}' "
        "WHEN 'null' THEN 1 ELSE 0 END"
    )

    def __init__(self) -> None:
        super().__init__(F("metadata"))

    def as_postgresql(self, compiler, connection, **extra):
        template = (
            "CASE jsonb_typeof(%(expressions)s) WHEN 'object' THEN (%(expressions)s - 'rules') = '{}'::jsonb "
            "WHEN 'null' THEN true ELSE false END"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


STORES_ONLY_RULES = Q(phase=Phase.BEFORE, action=Action.ALLOW) & Q(_MetadataOnlyRules())


@dataclass
class DecisionView:
    decision: Decision | None
    evaluations: list[Evaluation]
    folded: list[Evaluation] = field(default_factory=list)
    # The Governance tab counts the folded rows instead of loading them: (policy name, policy id) each.
    folded_policies: list[tuple[str, int | None]] = field(default_factory=list)

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
        if self.folded_policies and not self.evaluations:
            return "; ".join(dict.fromkeys(self.decision.reason.split("; ")))
        deciding = [e for e in self.evaluations if e.action == self.decision.action and e.reason]
        spoke = {e.policy_name for e in self.evaluations + self.folded} | {n for n, _ in self.folded_policies}
        if len(spoke) < 2 or not deciding:
            return self.decision.reason
        return "; ".join(f"{e.policy_name}: {e.reason}" for e in deciding)


@dataclass
class SummaryCell:
    action: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, action: str, n: int = 1) -> None:
        self.counts[action] = self.counts.get(action, 0) + n
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


@dataclass
class Counts:
    """What the run's evaluations add up to, from one aggregate query."""

    summary_phases: list[str]
    summary: list[PolicySummary]
    per_phase: dict[str, int]  # enforced evaluations, the folded ones included
    folded: list[tuple[str, int | None]]  # the policies whose before_workflow row only stored rules
    folded_count: int
    shadow_violations: int


def run_counts(*, run: Run) -> Counts:
    """The policy x phase summary (one row per policy, in order of first appearance, a cell per phase
    that has evaluations), the evaluations per phase, the folded rows and the shadow violations,
    counted by the database: one query, its rows bounded by policies x phases x actions."""
    rows = list(
        Evaluation.objects.filter(run=run)
        .values("policy_name", "policy_id", "phase", "action", "shadow")
        .annotate(n=Count("id"), folded=Count("id", filter=STORES_ONLY_RULES), first=Min("id"))
        .order_by()
    )
    rows.sort(key=lambda r: r["first"])
    enforced = [r for r in rows if not r["shadow"]]
    phases = [p for p in PHASE_ORDER if any(r["phase"] == p for r in enforced)]
    summary: dict[str, PolicySummary] = {}
    per_phase: dict[str, int] = defaultdict(int)
    folded: dict[str, int | None] = {}
    for r in enforced:
        if r["phase"] not in phases:
            continue  # a phase the engine does not know; the summary has no column for it
        row = summary.setdefault(
            r["policy_name"], PolicySummary(r["policy_name"], r["policy_id"], [SummaryCell() for _ in phases])
        )
        row.cells[phases.index(r["phase"])].add(r["action"], r["n"])
        per_phase[r["phase"]] += r["n"]
        if r["folded"]:
            folded.setdefault(r["policy_name"], r["policy_id"])
    return Counts(
        summary_phases=[str(p) for p in phases],
        summary=list(summary.values()),
        per_phase=dict(per_phase),
        folded=list(folded.items()),
        folded_count=sum(r["folded"] for r in enforced),
        shadow_violations=sum(r["n"] for r in rows if r["shadow"] and r["action"] in (Action.WARN, Action.BLOCK)),
    )


@dataclass
class PhaseGroup:
    phase: str
    decisions: list[DecisionView]
    evaluation_count: int = 0  # the run's at this phase, over every page
    continued: bool = False  # the phase began on the page before
    anchor: bool = True  # the page's first group of this phase carries its #phase- id

    @property
    def label(self) -> str:
        return PHASE_LABELS.get(self.phase, "")


@dataclass
class EvaluationPage:
    count: int = 0  # the rows every page holds together (enforced, the folded ones aside)
    shown: int = 0
    starts_at: int | None = None  # the ?evaluations= this page was reached by; None: the first page
    earlier: bool = False
    earlier_from: int | None = None  # the ?evaluations= of the page before; None: the first page
    next_from: int | None = None  # the ?evaluations= of the page after; None: this is the last

    @property
    def paged(self) -> bool:
        return self.earlier or self.next_from is not None


@dataclass
class GovernanceTab:
    phases: list[PhaseGroup]
    summary_phases: list[str]
    summary: list[PolicySummary]
    page: EvaluationPage = field(default_factory=EvaluationPage)
    folded_count: int = 0
    shadow_count: int = 0  # shadow warns and blocks, over the run

    def __bool__(self) -> bool:
        return bool(self.phases)

    def __iter__(self):
        return iter(self.phases)


def _decision_views(decisions: Iterable[Decision], evaluations: Iterable[Evaluation]) -> list[DecisionView]:
    """Each decision with its evaluations, the stored-rules ones folded apart (the Trace tab's)."""
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


def _page_rows(run: Run, starts_at: int | None) -> tuple[list[Evaluation], EvaluationPage, str | None]:
    """The enforced, unfolded evaluations from id `starts_at` on (the first page when None),
    EVALUATIONS_PER_PAGE of them; past the last, the last page. Also the phase of the row just before
    the page. One query, two on a later page (where the page before starts), three past the end."""
    rows = Evaluation.objects.filter(run=run, shadow=False).exclude(STORES_ONLY_RULES)
    start = starts_at or 0
    n = EVALUATIONS_PER_PAGE
    found = list(rows.filter(id__gte=start).select_related("reviewed_by").order_by("id")[: n + 1])
    if not found and start:  # past the end: the last page
        found = list(reversed(rows.select_related("reviewed_by").order_by("-id")[:n]))
    page = EvaluationPage()
    if len(found) > n:
        page.next_from = found[n].id
        found = found[:n]
    page.shown = len(found)
    phase_before = None
    if start and found:
        before = list(rows.filter(id__lt=found[0].id).order_by("-id").values_list("id", "phase")[: n + 1])
        if before:
            page.earlier, page.starts_at, phase_before = True, found[0].id, before[0][1]
            # A whole page back; when that reaches the first row, the first page (no ?evaluations=).
            page.earlier_from = before[n - 1][0] if len(before) > n else None
    return found, page, phase_before


def run_governance(*, run: Run, starts_at: int | None = None) -> GovernanceTab:
    """A page of the run's evaluations (from id `starts_at`, the first page when None) with their
    decisions, grouped by phase, and the policy x phase summary over all of them. A fixed number of
    queries, none returning more than a page's rows or the summary's (docs/dashboard.md#governance).

    The phase decisions (before_workflow, after_workflow: one each) come with every page; one whose
    rows are on no page (only stored rules, or no policy applied) shows on the first or last page."""
    counts = run_counts(run=run)
    evaluations, page, phase_before = _page_rows(run, starts_at)
    page.count = sum(counts.per_phase.values()) - counts.folded_count
    said = {e.decision_id for e in evaluations if e.decision_id is not None}
    decisions = list(
        Decision.objects.filter(run=run)
        .filter(Q(report__isnull=True) | Q(id__in=said))
        .annotate(report_seq=F("report__seq"))
        .order_by("id")
    )
    by_id = {d.id: d for d in decisions}
    groups: list[PhaseGroup] = []
    for e in evaluations:
        if not groups or groups[-1].phase != e.phase:
            groups.append(PhaseGroup(phase=e.phase, decisions=[]))
        views = groups[-1].decisions
        if e.decision_id is None or not views or views[-1].decision is None or views[-1].decision.id != e.decision_id:
            views.append(DecisionView(by_id.get(e.decision_id), []))
        views[-1].evaluations.append(e)
    quiet = [d for d in decisions if d.report_id is None and d.id not in said]
    if not page.earlier:
        _place(groups, [d for d in quiet if d.phase == Phase.BEFORE], at_start=True)
        # The folded rows' line goes with the first page's before_workflow decision.
        first = next((v for g in groups for v in g.decisions if v.decision and v.decision.phase == Phase.BEFORE), None)
        if first is not None:
            first.folded_policies = counts.folded
    if page.next_from is None:
        _place(groups, [d for d in quiet if d.phase == Phase.AFTER], at_start=False)
    seen: set[str] = set()
    for i, group in enumerate(groups):
        group.evaluation_count = counts.per_phase.get(group.phase, 0)
        group.continued = i == 0 and phase_before == group.phase
        group.anchor = group.phase not in seen
        seen.add(group.phase)
    return GovernanceTab(
        phases=groups,
        summary_phases=counts.summary_phases,
        summary=counts.summary,
        page=page,
        folded_count=counts.folded_count,
        shadow_count=counts.shadow_violations,
    )


def _place(groups: list[PhaseGroup], decisions: list[Decision], *, at_start: bool) -> None:
    """Phase decisions no row of the page spoke in, in their phase's group at the page's start
    (before_workflow) or end (after_workflow)."""
    if not decisions:
        return
    views = [DecisionView(d, []) for d in decisions]
    phase = decisions[0].phase
    if at_start and groups and groups[0].phase == phase:
        groups[0].decisions[0:0] = views
    elif at_start:
        groups.insert(0, PhaseGroup(phase=phase, decisions=views))
    elif groups and groups[-1].phase == phase:
        groups[-1].decisions.extend(views)
    else:
        groups.append(PhaseGroup(phase=phase, decisions=views))


def run_shadow_violations(*, run: Run, limit: int = SHADOW_SHOWN) -> list[Evaluation]:
    """What shadow policies would have warned or blocked in this run, oldest first, the first `limit`
    (run_counts counts them all). One query."""
    rows = Evaluation.objects.filter(run=run, shadow=True, action__in=(Action.WARN, Action.BLOCK))
    return list(rows.order_by("id")[:limit])
