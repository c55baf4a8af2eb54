"""The local verifier as a policy check (docs/verifier.md options on the grounding category)."""

import logging
from pathlib import Path

from django.conf import settings

from policies.judged import (
    CONSISTENCY_CHECK,
    short_quote,
    verifier_action,
)

from .budget import budgeted_check
from .escalation import annotate, escalate, options_from
from .verifier import CONTRADICTED, GroundingCheck, VerifierConfig
from .verifier.facts.work import Work
from .verifier.model_store import active_model_dir
from .verifier.verifier import DEFAULT_THRESHOLD

logger = logging.getLogger("groundrule.judges")

GROUNDING_NO_SOURCES = "GROUNDING_NO_SOURCES"
OUTPUT_SELF_CONTRADICTION = "OUTPUT_SELF_CONTRADICTION"


def model_store() -> Path | None:
    return Path(settings.VERIFIER_MODEL_STORE) if settings.VERIFIER_MODEL_STORE else None


def nli_model_dir() -> str | None:
    """The NLI cross-encoder that runs: VERIFIER_NLI_MODEL_DIR pins one; else the one
    ``manage.py verifier_model install`` made active (read again when it changes); else none, and
    the packaged verifier runs (docs/verifier.md, "Bring your own model")."""
    return settings.VERIFIER_NLI_MODEL_DIR or active_model_dir(model_store())


def config_for(rules: dict | None = None) -> VerifierConfig:
    rules = rules or {}
    return VerifierConfig(
        entailment_threshold=rules.get("entailment_threshold", DEFAULT_THRESHOLD),
        contradiction_threshold=rules.get("contradiction_threshold", DEFAULT_THRESHOLD),
        max_unverifiable_ratio=rules.get("max_unverifiable_ratio", 0.5),
        nli_model_dir=nli_model_dir(),
        threads=settings.VERIFIER_THREADS,
    )


def _sources(evidence) -> list[dict]:
    out = []
    for i, source in enumerate(evidence.sources):
        if isinstance(source, dict) and (source.get("text") or "").strip():
            out.append(
                {
                    "id": str(source.get("id") or f"source-{i}"),
                    "text": source["text"],
                    **({"score": source["score"]} if source.get("score") is not None else {}),
                }
            )
        elif isinstance(source, str) and source.strip():
            out.append({"id": f"source-{i}", "text": source})
    return out


def checked_with_escalation(
    *, tenant, text: str, sources: list, rules: dict, deadline: float | None
) -> tuple[GroundingCheck, list[str], dict | None, list[str]]:
    """The budgeted verifier check, then the LLM escalation of its undecided claims when the rules ask.

    (result, budget warnings, escalation metadata or None, escalation warnings). Without a tenant
    (no secrets, no cache) nothing is escalated. Whatever goes wrong in the escalation, the local
    verdicts stand.
    """
    config = config_for(rules)
    result, budget_warnings = budgeted_check(text, sources, config)
    options = options_from(rules)
    if options is None or tenant is None:
        return result, budget_warnings, None, []
    try:
        escalated, meta, warnings = escalate(
            tenant=tenant, check=result, sources=sources, options=options, config=config, deadline=deadline
        )
    except Exception as exc:  # the provider layer never raises; this is our own bug or the database
        logger.exception("verifier escalation failed")
        meta = {"status": "error", "model": options.model, "undecided": 0, "escalated": 0, "cached": False}
        return result, budget_warnings, meta, [f"LLM escalation skipped: {type(exc).__name__}; local verdicts kept"]
    return escalated, budget_warnings, meta, warnings


def verifier_outcome(*, rules: dict, evidence, tenant=None, deadline: float | None = None) -> tuple[str, str, dict]:
    """(action, reason, metadata) for one policy's verifier rules on what the agent reported.

    With ``nli_escalation: "llm"`` and a tenant, undecided claims are escalated within ``deadline``
    (judges/escalation.py); the call is recorded under ``metadata["escalation"]``.
    """
    sources = _sources(evidence)
    if not sources:
        return ("allow", "Verifier skipped: no sources to verify against", {"reason_codes": [GROUNDING_NO_SOURCES]})
    try:
        result, budget_warnings, escalation, escalation_warnings = checked_with_escalation(
            tenant=tenant, text=evidence.output or "", sources=sources, rules=rules, deadline=deadline
        )
    except Exception as exc:  # the model failed to load or run: never break the run
        logger.warning("verifier failed: %s", type(exc).__name__)
        message = f"Verifier skipped: {type(exc).__name__}"
        return "allow", message, {"warnings": [message]}
    verification = result.to_dict()
    annotate(verification["claims"], escalation)
    if not result.claims:
        return "allow", "Verifier: no factual claims to check", {"verification": verification, "reason_codes": []}
    if budget_warnings:
        verification["budget_warnings"] = budget_warnings

    contradicted = [{"claim": c.claim, "reason": c.reason} for c in result.claims if c.verdict == CONTRADICTED]
    action, reasons, codes = verifier_action(rules, contradicted=contradicted, ratio=result.unverifiable_ratio)
    metadata = {"verification": verification, "reason_codes": codes}
    if escalation is not None:
        metadata["escalation"] = escalation
    if reasons or escalation_warnings:
        # A degraded escalation is a warning beside the verdict, never a violation of its own.
        metadata["warnings"] = reasons + escalation_warnings
    if reasons:
        return action, "; ".join(reasons), metadata
    return "allow", f"Verifier: {result.summary}", metadata


MAX_LISTED_CONTRADICTIONS = 20


def consistency_outcome(*, rules: dict, output: str) -> tuple[str, str, dict]:
    """(action, reason, metadata) for factual_consistency_check on the final output.

    The claims of the output (``extract_claims``) are checked pairwise with the verifier's
    ``find_contradictions``: two claims that state conflicting facts about the same thing are a
    violation with the policy's ``action_on_violation``. Fewer than two claims: nothing to compare.
    The metadata says ``"check": "consistency"``, to tell it from the claim-vs-source verifier,
    whose evaluations share the source "verifier".
    """
    from .verifier import extract_claims, find_contradictions

    claims = extract_claims(output or "")
    base = {"check": CONSISTENCY_CHECK, "claims_checked": len(claims)}
    if len(claims) < 2:
        return "allow", "Consistency check: fewer than two claims to compare", base
    try:
        work = Work(settings.VERIFIER_MAX_WORK)
        pairs = find_contradictions(claims, config_for(rules), work=work)
    except Exception as exc:  # the embedder failed to load or run: never break the run
        logger.warning("consistency check failed: %s", type(exc).__name__)
        message = f"Consistency check skipped: {type(exc).__name__}"
        return "allow", message, {**base, "warnings": [message]}
    # some pairs were never compared: say so beside whatever was found
    stopped = ["Consistency check stopped comparing claims at the request's work budget (VERIFIER_MAX_WORK)."]
    stopped = stopped if work.refused else []
    if stopped:
        base["warnings"] = stopped
    if not pairs:
        return "allow", f"Consistency check passed ({len(claims)} claims)", base
    contradictions = [{"claim_a": a, "claim_b": b, "reason": why} for a, b, why in pairs]
    first_a, first_b, first_why = pairs[0]
    count = f" ({len(pairs)} pairs)" if len(pairs) > 1 else ""
    reason = (
        f'Contradictory claims in output{count}: "{short_quote(first_a)}" vs "{short_quote(first_b)}" ({first_why})'
    )
    metadata = {
        **base,
        "contradictions": contradictions[:MAX_LISTED_CONTRADICTIONS],
        "warnings": [reason] + stopped,
        "reason_codes": [OUTPUT_SELF_CONTRADICTION],
    }
    if len(pairs) > MAX_LISTED_CONTRADICTIONS:
        metadata["contradictions_total"] = len(pairs)
    return rules.get("action_on_violation", "warn"), reason, metadata
