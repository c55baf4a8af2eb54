"""The grounding category (docs/grounding-policies.md): are an agent's answers grounded in cited sources?

before_workflow stores the rules, mid_execution checks the scores of one report,
after_workflow audits citations, unsupported claims and confidence over the whole run.
The llm_* rules are validated and stored here; the judge itself runs in ``judges``.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.vocabulary import MODEL_PREFIXES

from .base import Category, Check, Result, RuleSpec, RunState
from .citations import check_citations, failures_metadata

# Integers have no upper bound in the seed; this one only keeps absurd values out of storage.
_MAX_COUNT = 1_000_000

NO_SCORES_ABOVE_FLOOR = "No grounding scores above relevance floor — all retrieved results appear irrelevant"
NO_CITATIONS = "No source citations provided (grounding required)"

# At most this many claims per check go to the escalation model (one request, ~80 output tokens each).
_MAX_ESCALATED_CLAIMS = 20

# The pass reasons for common counts, prebuilt: formatting them is a tenth of a passing check.
_SCORES_PASSED = tuple(f"Grounding scores passed ({n} checked)" for n in range(128))
_AUDIT_PASSED = tuple(f"Grounding audit passed ({n} citations)" for n in range(128))

GROUNDING_RULES: tuple[RuleSpec, ...] = (
    RuleSpec(
        name="require_source_grounding",
        label="Require source grounding",
        type="boolean",
        default=False,
        help="Flag the output when it cites no sources at all.",
    ),
    RuleSpec(
        name="min_grounding_score",
        label="Minimum grounding score",
        type="number",
        default=0.7,
        nullable=True,
        minimum=0.0,
        maximum=1.0,
        help="Lowest acceptable score per claim (0.0-1.0), checked at mid_execution. Empty turns the score check off.",
    ),
    RuleSpec(
        name="min_citations",
        label="Minimum citations",
        type="integer",
        default=1,
        minimum=0,
        maximum=_MAX_COUNT,
        help="Fewest source citations the final output must have.",
    ),
    RuleSpec(
        name="max_unsupported_claims",
        label="Maximum unsupported claims",
        type="integer",
        default=None,
        nullable=True,
        minimum=0,
        maximum=_MAX_COUNT,
        help="Most claims allowed without source support. Empty means no limit; 0 means none.",
    ),
    RuleSpec(
        name="factual_consistency_check",
        label="Factual consistency check",
        type="boolean",
        default=False,
        help="At after_workflow, check the claims of the final output against each other with "
        "the local verifier (numbers, units, dates, names, negation, opposite meanings, "
        "quantifiers); two claims of one answer that contradict each other are a violation.",
    ),
    RuleSpec(
        name="abstention_threshold",
        label="Abstention threshold",
        type="number",
        default=None,
        nullable=True,
        minimum=0.0,
        maximum=1.0,
        help="Flag the output when the reported output confidence falls below this (0.0-1.0). "
        "Skipped when the agent reports no confidence.",
    ),
    RuleSpec(
        name="abstention_response",
        label="Abstention response",
        type="string",
        default=None,
        nullable=True,
        max_length=2000,
        help="Message returned to the agent in place of its answer when this policy blocks.",
    ),
    RuleSpec(
        name="action_on_violation",
        label="Action on violation",
        type="enum",
        default="warn",
        choices=("warn", "block"),
        help="Warn records the violation and lets the agent continue; block stops it. "
        "Start with warn while you calibrate thresholds.",
    ),
    RuleSpec(
        name="score_relevance_floor",
        label="Score relevance floor",
        type="number",
        default=None,
        nullable=True,
        minimum=0.0,
        maximum=1.0,
        help="Ignore retrieval scores below this floor; only scores at or above it are "
        "checked against the minimum grounding score.",
    ),
    RuleSpec(
        name="score_eval_mode",
        label="Score evaluation mode",
        type="enum",
        default="all",
        choices=("all", "average", "top_n"),
        help="all: every score must pass; average: their mean must pass; top_n: only the N highest scores are checked.",
    ),
    RuleSpec(
        name="score_top_n",
        label="Top N scores",
        type="integer",
        default=3,
        minimum=1,
        maximum=_MAX_COUNT,
        help="How many of the highest scores to check when the mode is top_n.",
    ),
    RuleSpec(
        name="llm_grounding_check",
        label="LLM grounding judge",
        type="boolean",
        default=False,
        help="Have an LLM judge read the output and its sources and score its grounding.",
    ),
    RuleSpec(
        name="llm_grounding_model",
        label="Judge model",
        type="string",
        default="gpt-4o-mini",
        max_length=200,
        prefixes=MODEL_PREFIXES,
        help="Model for the judge: gpt-* (OpenAI), claude-* (Anthropic), llama-* or mixtral-* (Groq).",
    ),
    RuleSpec(
        name="llm_grounding_threshold",
        label="Judge threshold",
        type="number",
        default=0.7,
        minimum=0.0,
        maximum=1.0,
        help="Lowest acceptable judge score (0.0-1.0).",
    ),
    RuleSpec(
        name="llm_grounding_criteria",
        label="Judge criteria",
        type="string",
        default="",
        max_length=2000,
        help="Extra evaluation criteria appended to the judge prompt.",
    ),
    RuleSpec(
        name="llm_grounding_phase",
        label="Judge phase",
        type="enum",
        default="mid_execution",
        choices=("mid_execution", "after_workflow", "both"),
        help="When the judge runs: after each grounding report, after the workflow, or both.",
    ),
    # The local verifier (docs/verifier.md): claims of the output checked against the reported sources.
    # Validated here, executed in judges/ (it needs the model, so it is not part of the pure engine).
    RuleSpec(
        name="nli_check",
        label="Local claim verifier",
        type="boolean",
        default=False,
        help="Check each claim of the output against the reported sources with the local "
        "onnxruntime verifier: supported, contradicted or unverifiable.",
    ),
    RuleSpec(
        name="nli_phase",
        label="Verifier phase",
        type="enum",
        default="after_workflow",
        choices=("mid_execution", "after_workflow", "both"),
        help="When the verifier runs: on each grounding report's output, on the final output, or both.",
    ),
    RuleSpec(
        name="entailment_threshold",
        label="Entailment threshold",
        type="number",
        # The verifier's calibrated probability (docs/verifier.md): 0.5 is "more likely than not".
        default=0.5,
        minimum=0.0,
        maximum=1.0,
        help="Probability needed to call a claim supported (0.0-1.0; the verifier's calibrated probability).",
    ),
    RuleSpec(
        name="contradiction_threshold",
        label="Contradiction threshold",
        type="number",
        default=0.5,
        minimum=0.0,
        maximum=1.0,
        help="Probability needed to call a claim contradicted (0.0-1.0).",
    ),
    RuleSpec(
        name="max_unverifiable_ratio",
        label="Maximum unverifiable ratio",
        type="number",
        default=0.5,
        minimum=0.0,
        maximum=1.0,
        help="Largest share of claims that may be unverifiable before the output is flagged.",
    ),
    RuleSpec(
        name="contradiction_action",
        label="Action on contradiction",
        type="enum",
        default="warn",
        choices=("warn", "block"),
        help="What a claim that contradicts its source does.",
    ),
    RuleSpec(
        name="unverifiable_action",
        label="Action on unverifiable claims",
        type="enum",
        default="warn",
        choices=("warn", "block"),
        help="What too many unverifiable claims do.",
    ),
    # LLM escalation of the claims the local verifier leaves undecided (docs/verifier.md, "LLM
    # escalation of undecided claims"); the call itself is made in judges/escalation.py.
    RuleSpec(
        name="nli_escalation",
        label="Escalate undecided claims",
        type="enum",
        default="off",
        choices=("off", "llm"),
        # the figures are the held-out sweep's at the default thresholds (docs/verifier.md, "Held-out figures")
        help="llm: claims the verifier can neither support nor contradict (both probabilities below "
        "their thresholds) are sent to an LLM with the sources, and its verdict replaces the local one. "
        "Trade-off: accuracy: at the default thresholds the local verifier leaves 37% of held-out claims "
        "undecided, and its supported / contradicted verdicts are right 80% / 75% of the time; the LLM "
        "decides the undecided ones. Privacy: only those claims and their source sentences leave the server, "
        "to your provider. Cost: one call per report with undecided claims (about $0.0001-0.0003 on "
        "gpt-4o-mini), within the report's time budget; answers are cached per claim.",
    ),
    RuleSpec(
        name="nli_escalation_model",
        label="Escalation model",
        type="string",
        default="gpt-4o-mini",
        max_length=200,
        prefixes=MODEL_PREFIXES,
        help="Model for the escalation: gpt-* (OpenAI), claude-* (Anthropic), llama-* or mixtral-* "
        "(Groq), with the tenant's key for that provider.",
    ),
    RuleSpec(
        name="nli_escalation_max_claims",
        label="Escalated claims per check",
        type="integer",
        default=5,
        minimum=1,
        maximum=_MAX_ESCALATED_CLAIMS,
        help="Most undecided claims sent to the LLM per check, those closest to a verdict first.",
    ),
    # What context may reach the model (grounding_context.decide_grounding, docs/grounding-context.md). These rules
    # decide nothing here: the agent applies them, through POST /api/v1/grounding/decide/, the
    # before_workflow decision's "grounding_context" or the SDK's decide_grounding.
    RuleSpec(
        name="context_mode",
        label="Context mode",
        type="enum",
        default="hybrid",
        choices=("chunks_only", "attachments_only", "hybrid"),
        help="What reaches the model: retrieved chunk text only, canonical document attachments "
        "only (chunk text is the fallback when no document was prepared), or both.",
    ),
    RuleSpec(
        name="canonical_when_available",
        label="When canonical documents are available",
        type="enum",
        default="augment_chunks",
        choices=("prefer_attachments", "augment_chunks"),
        help="Hybrid mode only: prefer_attachments drops the chunk text when documents were "
        "prepared; augment_chunks sends both.",
    ),
    RuleSpec(
        name="include_retrieved_text",
        label="Include retrieved text",
        type="boolean",
        default=None,
        nullable=True,
        help="Override: always (true) or never (false) put the retrieved text in the prompt, "
        "whatever the mode decides. Empty leaves it to the mode.",
    ),
    RuleSpec(
        name="max_context_chars",
        label="Maximum context characters",
        type="integer",
        default=None,
        nullable=True,
        minimum=1,
        maximum=100_000_000,
        help="Cut the retrieved text to this many characters and mark the cut. Empty means no limit.",
    ),
    # The citation contract (docs/citations.md), checked at mid_execution (one report's citations) and
    # after_workflow (all of them).
    RuleSpec(
        name="citation_quotes",
        label="Citation quotes",
        type="enum",
        default="off",
        choices=("off", "required"),
        help="required: every citation must be an object with a quote from its source. "
        "A quote that is given is always checked against the cited source's text.",
    ),
    RuleSpec(
        name="max_citations",
        label="Maximum citations",
        type="integer",
        default=None,
        nullable=True,
        minimum=1,
        maximum=_MAX_COUNT,
        help="Most citations the output may have. Empty means no limit.",
    ),
    RuleSpec(
        name="citations_must_resolve",
        label="Citations must resolve",
        type="boolean",
        default=False,
        help="Every citation must name a source the run reported (a grounding report's sources "
        "or a retrieval span's results); a citation to anything else is flagged as fabricated.",
    ),
    # The score audit (docs/score-audit.md): how often reports are re-scored by the local verifier,
    # and a violation when the agent's reported scores run ahead of what the verifier measures.
    RuleSpec(
        name="score_audit_rate",
        label="Score audit rate",
        type="number",
        default=None,
        nullable=True,
        minimum=0.0,
        maximum=1.0,
        help="Share of this policy's grounding reports re-scored by the local verifier (0.0-1.0). "
        "Empty uses the tenant's rate.",
    ),
    RuleSpec(
        name="score_audit_auditor",
        label="Score auditor",
        type="enum",
        default="tenant",
        choices=("tenant", "local", "llm"),
        help="Who measures this policy's sampled reports: local (the local verifier: private, free) or llm "
        "(this policy's LLM judge model, with the tenant's key: stronger on paraphrase, paid per report, the "
        "output and sources go to the provider). tenant uses the tenant's setting. Each auditor's figures "
        "are kept apart, and max_score_inflation reads the figures of the auditor in effect.",
    ),
    RuleSpec(
        name="max_score_inflation",
        label="Maximum score inflation",
        type="number",
        default=None,
        nullable=True,
        minimum=0.0,
        maximum=1.0,
        help="Flag an agent whose reported grounding scores exceed the verifier's measured support "
        "by more than this, on average over 7 days. Empty disables the check.",
    ),
    RuleSpec(
        name="score_audit_min_samples",
        label="Score audit minimum samples",
        type="integer",
        default=20,
        minimum=1,
        maximum=_MAX_COUNT,
        help="Audited reports needed before the inflation check may flag an agent.",
    ),
)


def _violation(rules: dict, reason: str, metadata: dict) -> Result:
    action = rules["action_on_violation"]
    # An empty abstention_response is treated as unset: there would be nothing to show.
    response = (rules["abstention_response"] or None) if action == "block" else None
    return action, reason, metadata, response


def _before_workflow(rules: dict, state: RunState) -> Result:
    return ("allow", "Grounding rules stored", {"rules": dict(rules)}, None)


def _mid_execution(rules: dict, state: RunState) -> Result:
    result = _mid_scores(rules, state)
    reasons: list[str] = []
    extra: dict = {}
    if state.citations:
        reasons, failures = check_citations(rules, state.citations, state.sources)
        extra = failures_metadata(failures)
    inflation = _inflation_reason(rules, state)
    if inflation is not None:
        reasons.append(inflation[0])
        extra["score_audit"] = inflation[1]
    if not reasons:
        return result
    # Citation and score-audit problems come after the score verdict, so a report without any
    # keeps the contract's reasons exactly.
    action, reason, metadata, _ = result
    warnings = reasons if action == "allow" else [reason, *reasons]
    metadata = {**metadata, "warnings": warnings, **extra}
    return _violation(rules, "; ".join(warnings), metadata)


def _inflation_reason(rules: dict, state: RunState) -> tuple[str, dict] | None:
    limit = rules["max_score_inflation"]
    inflation = state.score_inflation
    if limit is None or inflation is None or state.score_audit_samples < rules["score_audit_min_samples"]:
        return None
    if round(inflation, 2) <= limit:
        return None
    shown = round(inflation, 2)
    return (
        f"Reported scores exceed measured support by {shown} (agent average over 7 days)",
        {"inflation": shown, "max_score_inflation": limit, "samples": state.score_audit_samples},
    )


def _mid_scores(rules: dict, state: RunState) -> Result:
    scores: Sequence[float] = state.grounding_scores
    if not scores:
        return ("allow", "No grounding scores to check", {}, None)
    threshold = rules["min_grounding_score"]
    if threshold is None:
        return ("allow", "Score check disabled", {}, None)

    floor = rules["score_relevance_floor"]
    if floor is not None:
        scores = [s for s in scores if s >= floor]
        if not scores:
            metadata = {"relevance_floor": floor, "scores": list(state.grounding_scores)}
            return _violation(rules, NO_SCORES_ABOVE_FLOOR, metadata)

    mode = rules["score_eval_mode"]
    if mode == "all":
        for score in scores:
            if score < threshold:
                return _violation(
                    rules,
                    f"Grounding score ({score}) below threshold ({threshold})",
                    {"score": score, "threshold": threshold},
                )
        checked = len(scores)
        metadata = {"checked": checked, "threshold": threshold}
    elif mode == "average":
        checked = len(scores)
        mean = sum(scores) / checked
        # The mean is rounded to 4 places before comparing, so float noise (three 0.7s
        # averaging 0.6999…) cannot fail. round() is slow, and rounding moves the mean by at
        # most 0.00005, so a mean clearly above the threshold skips it.
        if mean < threshold + 0.0001 and (average := round(mean, 4)) < threshold:
            return _violation(
                rules,
                f"Average grounding score ({average}) below threshold ({threshold})",
                {"average": average, "threshold": threshold, "count": checked},
            )
        metadata = {"checked": checked, "threshold": threshold, "mode": mode}
    else:  # top_n
        top_n = rules["score_top_n"]
        # Sorting only matters when some scores fall outside the top N.
        top = scores if len(scores) <= top_n else sorted(scores, reverse=True)[:top_n]
        failing = [s for s in top if s < threshold]
        if failing:
            # Checked from the highest down, the first failure is the highest failing score.
            score = max(failing)
            return _violation(
                rules,
                f"Grounding score ({score}) below threshold ({threshold}) in top {top_n}",
                {"score": score, "threshold": threshold, "top_n": top_n},
            )
        checked = len(top)
        metadata = {"checked": checked, "threshold": threshold, "mode": mode}
    reason = _SCORES_PASSED[checked] if checked < 128 else f"Grounding scores passed ({checked} checked)"
    return "allow", reason, metadata, None


def _after_workflow(rules: dict, state: RunState) -> Result:
    citation_count = len(state.citations)
    warnings = []
    min_citations = rules["min_citations"]
    if citation_count < min_citations:
        warnings.append(f"Citations ({citation_count}) below minimum ({min_citations})")
    if citation_count == 0 and rules["require_source_grounding"]:
        warnings.append(NO_CITATIONS)
    max_unsupported = rules["max_unsupported_claims"]
    if max_unsupported is not None and len(state.unsupported_claims) > max_unsupported:
        warnings.append(f"Unsupported claims ({len(state.unsupported_claims)}) exceeds max ({max_unsupported})")
    abstention = False
    threshold = rules["abstention_threshold"]
    confidence = state.output_confidence
    if threshold is not None and confidence is not None and confidence < threshold:
        abstention = True
        warnings.append(f"Output confidence ({confidence}) below abstention threshold ({threshold})")

    failures: list[dict] = []
    if state.citations:
        reasons, failures = check_citations(rules, state.citations, state.sources)
        warnings += reasons

    if not warnings:
        reason = (
            _AUDIT_PASSED[citation_count]
            if citation_count < 128
            else f"Grounding audit passed ({citation_count} citations)"
        )
        return "allow", reason, {"citation_count": citation_count}, None
    metadata = {"warnings": warnings, "citation_count": citation_count, **failures_metadata(failures)}
    if abstention:
        metadata["abstention_triggered"] = True
    return _violation(rules, "; ".join(warnings), metadata)


_CHECKS: dict[str, Check] = {
    "before_workflow": _before_workflow,
    "mid_execution": _mid_execution,
    "after_workflow": _after_workflow,
}


class GroundingCategory(Category):
    name = "grounding"
    label = "Grounding"
    description = (
        "Requires agent outputs to be grounded in cited sources, with measurable confidence "
        "scores and limits on unsupported claims."
    )
    rules = GROUNDING_RULES

    def check(self, phase: str) -> Check | None:
        return _CHECKS.get(phase)
