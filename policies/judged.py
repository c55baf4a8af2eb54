"""What a judge's stored output decides under a policy's rules: the thresholding half of the LLM
judge and the local verifier, pure, so that the live judges (judges/services.py,
judges/verification.py), replay (policies/replay.py) and calibration (policies/calibration.py)
turn the same numbers into the same verdicts.

A judge's expensive half (the provider call, the verifier's model) produces numbers that do not
depend on the policy's thresholds: the LLM judge's score, and per claim the verifier's
probabilities. Those are stored in the evaluation's metadata. Re-thresholding them with other
rules is what this module does; nothing here calls a provider or loads a model.

Per verifier claim the stored inputs are ``probabilities`` (``supported``, ``contradicted``) and
``thresholds_input``: ``conflict`` (the confidence of the fact conflict found on the claim's
evidence, or null) and ``backstop`` (whether that conflict may decide for an undecided model,
``fact_backstop`` in judges/verifier/verifier.py). Claims stored before ``thresholds_input``
existed are re-thresholded on their probabilities alone; a claim with neither keeps its verdict.
No Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.vocabulary import SEVERITY, EvaluationSource

LLM = EvaluationSource.LLM_JUDGE.value
VERIFIER = EvaluationSource.VERIFIER.value
# Cross-claim consistency (factual_consistency_check): stored with source "verifier" and
# ``"check": "consistency"`` in its metadata.
CONSISTENCY = "consistency"
CONSISTENCY_CHECK = "consistency"

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
UNVERIFIABLE = "unverifiable"

GROUNDING_CONTRADICTION = "GROUNDING_CONTRADICTION"
GROUNDING_UNVERIFIABLE = "GROUNDING_UNVERIFIABLE"


def _phase_matches(setting: str, phase: str) -> bool:
    return setting == "both" or setting == phase


def kinds_for(rules: dict, phase: str) -> list[str]:
    """Which judges a policy's rules ask for at this phase."""
    kinds = []
    if rules.get("llm_grounding_check") and _phase_matches(rules.get("llm_grounding_phase", "mid_execution"), phase):
        kinds.append(LLM)
    if rules.get("nli_check") and _phase_matches(rules.get("nli_phase", "after_workflow"), phase):
        kinds.append(VERIFIER)
    if rules.get("factual_consistency_check") and phase == "after_workflow":
        kinds.append(CONSISTENCY)
    return kinds


def round_score(score: float) -> float:
    return round(float(score), 4)


def llm_verdict(rules: dict, score: float) -> tuple[str, str, float]:
    """(action, reason, threshold) of an LLM judge score under ``rules``."""
    threshold = round_score(rules["llm_grounding_threshold"])
    score = round_score(score)
    if score < threshold:
        return rules["action_on_violation"], f"LLM judge score ({score}) below threshold ({threshold})", threshold
    return "allow", f"LLM judge score ({score}) meets threshold ({threshold})", threshold


def short_quote(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verifier_action(rules: dict, *, contradicted: Sequence[dict], ratio: float) -> tuple[str, list[str], list[str]]:
    """(action, reasons, reason codes) of a verification: contradicted claims (dicts with ``claim``
    and ``reason``) and the share of unverifiable claims, under ``rules``."""
    reasons, codes, action = [], [], "allow"
    if contradicted:
        first = contradicted[0]
        noun = "claim contradicts" if len(contradicted) == 1 else "claims contradict"
        reasons.append(
            f'Verifier: {len(contradicted)} {noun} the sources — "{short_quote(first["claim"])}" ({first["reason"]})'
        )
        codes.append(GROUNDING_CONTRADICTION)
        action = rules.get("contradiction_action", "warn")
    limit = rules.get("max_unverifiable_ratio", 0.5)
    if ratio > limit:
        reasons.append(f"Verifier: unverifiable claims ratio ({ratio}) exceeds max ({limit})")
        codes.append(GROUNDING_UNVERIFIABLE)
        other = rules.get("unverifiable_action", "warn")
        action = other if SEVERITY[other] > SEVERITY[action] else action
    return action, reasons, codes


def claim_verdict(claim: dict, *, entailment: float, contradiction: float) -> str:
    """A stored claim's verdict under other thresholds (the order of judges/verifier/verifier.py
    ``_decide``: contradicted, then the fact backstop, then supported, else unverifiable).

    A claim the LLM escalation decided keeps the LLM's verdict where the local probabilities still
    leave it undecided under the new thresholds: replay never calls a provider, and that answer is
    what the escalation would have given again (docs/verifier.md, LLM escalation).
    """
    local = _local_claim_verdict(claim, entailment=entailment, contradiction=contradiction)
    if claim.get("decided_by") == "llm" and local == UNVERIFIABLE:
        return claim.get("verdict", UNVERIFIABLE)
    return local


def _local_claim_verdict(claim: dict, *, entailment: float, contradiction: float) -> str:
    probabilities = claim.get("probabilities")
    if not isinstance(probabilities, dict):
        return claim.get("verdict", UNVERIFIABLE)
    p_sup = probabilities.get(SUPPORTED, 0.0)
    p_con = probabilities.get(CONTRADICTED, 0.0)
    inputs = claim.get("thresholds_input")
    if isinstance(inputs, dict):
        conflict = inputs.get("conflict")
        backstop = bool(inputs.get("backstop"))
    else:
        # Stored before the inputs were: a conflict is known only where it decided.
        conflict = claim.get("confidence") if claim.get("verdict") == CONTRADICTED else None
        backstop = claim.get("decided_by") == "fact_backstop"
        if claim.get("decided_by") == "combiner" and claim.get("verdict") == CONTRADICTED:
            conflict = 1.0  # the combiner decided: a conflict was there; its confidence was not kept
    has_conflict = conflict is not None
    if claim.get("kind") == "nli" or (inputs or {}).get("path") == "nli":
        # NLI path: entailment first, then contradiction, then the backstop.
        if p_sup >= entailment:
            return SUPPORTED
        if p_con >= contradiction:
            return CONTRADICTED
        return CONTRADICTED if backstop and has_conflict and conflict >= contradiction else UNVERIFIABLE
    # a verifier since 2026-11-27 may call a contradiction that no single fact shows (verifier._decide)
    on_meaning = isinstance(inputs, dict) and bool(inputs.get("on_meaning"))
    if p_con >= contradiction and (has_conflict or on_meaning):
        return CONTRADICTED
    if backstop and has_conflict and p_sup < entailment and conflict >= contradiction:
        return CONTRADICTED
    if p_sup >= entailment:
        return SUPPORTED
    return UNVERIFIABLE


def verifier_rethreshold(rules: dict, verification: dict) -> tuple[str, str, dict]:
    """(action, reason, metadata) of a stored verification under ``rules``' verifier thresholds."""
    claims = [c for c in verification.get("claims") or () if isinstance(c, dict)]
    if not claims:
        return "allow", "Verifier: no factual claims to check", {"reason_codes": []}
    entailment = rules.get("entailment_threshold", 0.5)
    contradiction = rules.get("contradiction_threshold", 0.5)
    verdicts = [claim_verdict(c, entailment=entailment, contradiction=contradiction) for c in claims]
    contradicted = [
        {"claim": c.get("claim", ""), "reason": c.get("reason", "")}
        for c, v in zip(claims, verdicts, strict=True)
        if v == CONTRADICTED
    ]
    unverifiable = sum(1 for v in verdicts if v == UNVERIFIABLE)
    ratio = round(unverifiable / len(claims), 4)
    action, reasons, codes = verifier_action(rules, contradicted=contradicted, ratio=ratio)
    supported = sum(1 for v in verdicts if v == SUPPORTED)
    metadata = {
        "reason_codes": codes,
        "rethresholded": {
            "supported_count": supported,
            "contradicted_count": len(contradicted),
            "unverifiable_count": unverifiable,
            "unverifiable_ratio": ratio,
        },
    }
    if reasons:
        metadata["warnings"] = reasons
        return action, "; ".join(reasons), metadata
    return "allow", f"Verifier: {supported}/{len(claims)} claims supported", metadata


def consistency_verdict(rules: dict, metadata: dict) -> tuple[str, str]:
    """A stored consistency check under ``rules``: its pairs are kept as found (the pairs' conflict
    confidences are not stored), only the action is the policy's."""
    if metadata.get("contradictions"):
        return rules.get("action_on_violation", "warn"), "Contradictory claims in output (stored check)"
    return "allow", "Consistency check passed (stored check)"
