"""LLM escalation of the claims the local verifier leaves undecided (docs/verifier.md, last section).

A claim is *undecided* when the verifier compared it with source text and reached neither verdict:
P(supported) < ``entailment_threshold`` and P(contradicted) < ``contradiction_threshold`` (on the NLI
path, the model's entailment and contradiction), and no fact backstop decided. Such a claim comes out
``unverifiable`` with a matched source sentence. Claims the request's verifier budget left unchecked
(judges/budget.py) were never compared and are not escalated, nor are claims with no source text.

With the grounding rule ``nli_escalation: "llm"`` the undecided claims, at most
``nli_escalation_max_claims`` of them (those whose supported or contradicted probability came
closest to its threshold first, then in order), go in ONE request to ``nli_escalation_model``
through the grounding judge's provider layer (judges/llm/providers.py), with the tenant's secrets
and its per-tenant cache of answers by request hash (judges.models.Judgement). The model's verdict
replaces the local one (``decided_by: "llm"``, ``escalated: true``); the local verdict is kept in
the reason. Every failure (no key, refused base URL, HTTP error, timeout, an answer that is not
the JSON asked for, no time left in the inline budget) keeps the local verdicts and adds a warning:
never an error for the caller.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from django.conf import settings

from tenants.models import Tenant

from . import llm
from .budget import regraded
from .services import CredentialsRefused, cached_judgement, provider_credentials, store_judgement, tenant_visible
from .verifier import CONTRADICTED, SUPPORTED, UNVERIFIABLE, ClaimVerdict, GroundingCheck, VerifierConfig
from .verifier.verifier import source_id

OFF = "off"
LLM = "llm"
MODES = (OFF, LLM)
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_MAX_CLAIMS = 5
MAX_CLAIMS_LIMIT = 20
#: No provider call is started with less than this left of the inline budget.
MIN_SECONDS = 0.2

STATUS_BUDGET = "budget_spent"
STATUS_NO_VERDICTS = "unparseable"


@dataclass(frozen=True)
class EscalationOptions:
    model: str
    max_claims: int


def options_from(rules: dict | None) -> EscalationOptions | None:
    """The escalation a policy's (or a check request's) rules ask for; None when it is off."""
    rules = rules or {}
    if rules.get("nli_escalation", OFF) != LLM:
        return None
    # the deployment's ceiling bounds every policy's (a report runs each verifier policy once)
    asked = int(rules.get("nli_escalation_max_claims") or DEFAULT_MAX_CLAIMS)
    return EscalationOptions(
        model=rules.get("nli_escalation_model") or DEFAULT_MODEL,
        max_claims=max(0, min(asked, settings.VERIFIER_ESCALATION_MAX_CLAIMS)),
    )


def is_undecided(claim: ClaimVerdict) -> bool:
    """Compared with source text (a best source), and neither supported nor contradicted."""
    return claim.verdict == UNVERIFIABLE and claim.best_source is not None and not claim.escalated


def annotate(claims: list[dict], meta: dict | None) -> list[dict]:
    """The claims as stored and returned: each says whether the local verifier left it ``undecided``
    (compared with source text, neither threshold reached: the band the cascade escalates), and an
    escalated one carries its ``escalation`` (model, the LLM's verdict and confidence, latency, its
    share of the call's cost, or why the local verdict was kept)."""
    records = {r["claim"]: r for r in (meta or {}).get("claims") or () if isinstance(r, dict)}
    for index, claim in enumerate(claims):
        claim["undecided"] = claim.get("decided_by") == "llm" or (
            claim.get("verdict") == UNVERIFIABLE and claim.get("best_source") is not None
        )
        record = records.get(index)
        if record is not None:
            claim["escalation"] = {k: v for k, v in record.items() if k != "claim"}
    return claims


def _closeness(claim: ClaimVerdict) -> float:
    probabilities = claim.probabilities or {}
    return max(float(probabilities.get(SUPPORTED, 0.0)), float(probabilities.get(CONTRADICTED, 0.0)))


def _chosen(claims: list[ClaimVerdict], limit: int) -> tuple[list[int], int]:
    """(indices of the claims to escalate, how many were undecided)."""
    undecided = [i for i, claim in enumerate(claims) if is_undecided(claim)]
    ranked = sorted(undecided, key=lambda i: (-_closeness(claims[i]), i))
    return sorted(ranked[:limit]), len(undecided)


def _escalated(claim: ClaimVerdict, verdict: llm.LLMVerdict, model: str) -> ClaimVerdict:
    said = verdict.reason or verdict.verdict
    return dataclasses.replace(
        claim,
        verdict=verdict.verdict,
        confidence=verdict.confidence,
        reason=f"LLM ({model}): {said} [local verifier: {claim.verdict}, {claim.reason}]",
        escalated=True,
        decided_by="llm",
        kind="llm" if verdict.verdict == CONTRADICTED else None,
        failed=f"llm: {said}" if verdict.verdict != SUPPORTED else None,
    )


def _prompt_sources(claims: list[ClaimVerdict], chosen: list[int], sources: list) -> list:
    """The sources as the LLM reads them: the sentences the verifier matched to the chosen claims first.

    The prompt keeps only the head of each source and of all of them (judges/llm/prompt.py), so the
    sentence a claim was compared with, deep in a long or late source, would otherwise never reach
    the model asked to decide on it. The other sources follow as far as the prompt's size allows.
    """
    excerpts: dict[str, list[str]] = {}
    for i in chosen:
        claim = claims[i]
        used = [(str(e["source_id"]), e["span"]) for e in claim.evidence]
        if claim.best_source is not None:
            used.append((str(claim.best_source.id), claim.best_source.span))
        for ident, span in used:
            spans = excerpts.setdefault(ident, [])
            if span and span not in spans:
                spans.append(span)
    rest = [s for n, s in enumerate(sources or []) if source_id(s, n) not in excerpts]
    return [{"id": ident, "text": " ".join(spans)} for ident, spans in excerpts.items()] + rest


def _visible(done: llm.Completion) -> dict:
    """What the evaluation records of a call: usage and status, never the upstream text."""
    meta = tenant_visible(
        {
            "status": done.status,
            "model": done.model,
            "provider": done.provider,
            "latency_ms": done.latency_ms,
            "input_tokens": done.input_tokens,
            "output_tokens": done.output_tokens,
            "cost_usd": done.cost_usd,
            "attempts": done.attempts,
            "error": done.error,
        }
    )
    meta.pop("raw_text", None)
    return meta


def escalate(
    *,
    tenant: Tenant,
    check: GroundingCheck,
    sources: list,
    options: EscalationOptions,
    config: VerifierConfig,
    deadline: float | None,
) -> tuple[GroundingCheck, dict, list[str]]:
    """(the check with the LLM's verdicts in place, the ``escalation`` metadata, warnings).

    ``deadline`` (time.monotonic()) bounds an inline check; None means a background one, which gets
    ``JUDGE_BACKGROUND_TIMEOUT_SECONDS``.
    """
    claims = list(check.claims)
    chosen, undecided = _chosen(claims, options.max_claims)
    model = options.model
    meta: dict = {"model": model, "undecided": undecided, "escalated": 0, "cached": False}
    if not chosen:
        meta["status"] = "nothing_to_escalate"
        return check, meta, []

    def degraded(status: str, why: str, extra: dict | None = None) -> tuple[GroundingCheck, dict, list[str]]:
        meta.update(extra or {})
        meta["status"] = status
        return check, meta, [f"LLM escalation skipped: {why}; local verdicts kept"]

    try:
        meta["provider"] = llm.provider_for_model(model)
    except ValueError:  # rules and requests are validated; an old stored rule is not a 500
        return degraded("error", f"unsupported model {model!r}")

    keys = {i: llm.claim_cache_key(model, claims[i].claim, _evidence_of(claims[i])) for i in chosen}
    verdicts: dict[int, llm.LLMVerdict] = {}
    calls: dict[int, dict] = {}
    for i in chosen:
        stored = cached_judgement(tenant=tenant, key=keys[i])
        if stored is not None and isinstance(stored.get("verdict"), dict):
            verdicts[i] = llm.LLMVerdict(**stored["verdict"])
            calls[i] = {**stored.get("call", {}), "cached": True, "cost_usd": 0.0}
    ask = [i for i in chosen if i not in verdicts]
    failure: tuple[str, str, dict] | None = None
    if ask:
        asked, failure = _ask(tenant=tenant, claims=claims, ask=ask, sources=sources, model=model, deadline=deadline)
        for i, (verdict, call) in asked.items():
            verdicts[i], calls[i] = verdict, call
            store_judgement(
                tenant=tenant, key=keys[i], model=model, result={"call": call, "verdict": verdict.as_dict()}
            )
        first = next(iter(asked.values()), None)
        if first is not None:
            meta.update({**first[1], "cost_usd": sum(call.get("cost_usd") or 0.0 for _, call in asked.values())})
        elif failure is not None:
            meta.update(failure[2])
    else:
        meta.update({**calls[chosen[0]], "cached": True})
        meta["cost_usd"] = 0.0

    warnings, changes = [], []
    for index in chosen:
        local = claims[index]
        if index in verdicts:
            verdict = verdicts[index]
            changes.append(_claim_record(index, local, model, verdict=verdict, call=calls[index]))
            claims[index] = _escalated(local, verdict, model)
        elif failure is not None:
            changes.append(_claim_record(index, local, model, kept=f"{failure[1]}; local verdict kept"))
        else:
            changes.append(_claim_record(index, local, model, kept="the LLM gave no verdict; local verdict kept"))
    decided = sum(1 for c in changes if c.get("llm"))
    meta["claims"] = changes
    if failure is not None:
        meta.update({"status": failure[0], "escalated": decided})
        if not decided:
            return check, meta, [f"LLM escalation skipped: {failure[1]}; local verdicts kept"]
        warnings.append(
            f"LLM escalation failed for {len(ask)} of {len(chosen)} claims ({failure[1]}); their local verdicts kept"
        )
    elif decided < len(chosen):
        warnings.append(
            f"LLM escalation gave no verdict for {len(chosen) - decided} of {len(chosen)} claims; "
            "their local verdicts kept"
        )
    if failure is None:
        meta.update({"status": llm.STATUS_OK, "escalated": decided})
    return regraded(claims, config, check.method), meta, warnings


def _evidence_of(claim: ClaimVerdict) -> list[str]:
    spans = [str(e.get("span") or "") for e in claim.evidence]
    if claim.best_source is not None:
        spans.append(claim.best_source.span)
    return sorted(set(s for s in spans if s))


def _claim_record(
    index: int, local: ClaimVerdict, model: str, *, verdict=None, call: dict | None = None, kept: str = ""
) -> dict:
    """What the escalation did to one claim, kept with the claim (the Governance tab shows it)."""
    record: dict = {"claim": index, "local": local.verdict, "model": model}
    if verdict is None:
        record.update({"llm": None, "kept": kept})
        return record
    call = call or {}
    record.update(
        {
            "llm": verdict.verdict,
            "confidence": verdict.confidence,
            "cached": bool(call.get("cached")),
            "latency_ms": call.get("latency_ms"),
            "cost_usd": call.get("cost_usd"),
        }
    )
    return record


def _ask(
    *, tenant: Tenant, claims: list[ClaimVerdict], ask: list[int], sources: list, model: str, deadline: float | None
) -> tuple[dict[int, tuple[llm.LLMVerdict, dict]], tuple[str, str, dict] | None]:
    """One provider call for the claims not in the cache: ({claim index: (verdict, its share of the
    call)}, or the failure (status, why, call metadata))."""
    provider = llm.provider_for_model(model)
    system, user = llm.build_claims_prompt([claims[i].claim for i in ask], _prompt_sources(claims, ask, sources))
    try:
        api_key, base_url = provider_credentials(tenant=tenant, provider=provider)
    except CredentialsRefused as exc:
        return {}, ("error", str(exc), {})
    if not api_key:
        return {}, (llm.STATUS_NO_API_KEY, f"no {llm.SECRET_FOR_PROVIDER[provider]} configured", {})
    if deadline is None:
        timeout = settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS
    else:
        timeout = deadline - time.monotonic()
        if timeout < MIN_SECONDS:
            return {}, (STATUS_BUDGET, "no time left in JUDGE_SYNC_BUDGET_SECONDS", {})
    done = llm.complete(
        model=model,
        system=system,
        user=user,
        api_key=api_key,
        base_url=base_url,
        timeout=timeout,
        max_retries=1,
        max_tokens=llm.max_tokens_for(len(ask)),
        purpose="verifier escalation",
    )
    call = _visible(done)
    if done.status == llm.STATUS_TIMEOUT:
        return {}, (done.status, f"timed out after {timeout:.1f}s", call)
    if done.status != llm.STATUS_OK:
        return {}, (done.status, "provider error", call)
    parsed = llm.parse_verdicts(done.text, len(ask))
    if not parsed:
        call["error"] = "The answer held no verdict in the JSON asked for"
        return {}, (STATUS_NO_VERDICTS, "unreadable answer", call)
    share = {**call, "cached": False}
    if isinstance(call.get("cost_usd"), int | float):
        share["cost_usd"] = round(call["cost_usd"] / len(parsed), 8)
    return {ask[n - 1]: (verdict, share) for n, verdict in parsed.items() if 1 <= n <= len(ask)}, None
