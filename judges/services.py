"""Judgements as evaluations: the LLM judge (docs/grounding-policies.md) and the local verifier (docs/verifier.md).

Both turn (policy, phase, what the agent reported) into one `policies.engine.Evaluation` that is
combined with the engine's. Neither ever breaks a run: every failure becomes an `allow` evaluation
whose metadata says what happened (docs/grounding-policies.md, "Graceful Degradation").
"""

import logging
import re
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction

from core import metrics, outbound
from policies import judged
from policies.engine import Evaluation, PolicySpec
from tenants.models import Tenant
from tenants.services import secret_value

from . import llm
from .models import Judgement

logger = logging.getLogger("groundrule.judges")

# Cross-claim consistency (factual_consistency_check) is the local verifier's contradiction
# detection between the claims of one answer; its evaluations are stored with source "verifier".
LLM, VERIFIER, CONSISTENCY = judged.LLM, judged.VERIFIER, judged.CONSISTENCY


@dataclass(frozen=True)
class Evidence:
    """What a judge reads: the output, and the citations and sources it should be grounded in."""

    output: str
    citations: tuple = ()
    sources: tuple = field(default_factory=tuple)


def kinds_for(spec: PolicySpec, phase: str) -> list[str]:
    """Which judges a policy asks for at this phase (policies/judged.py, which replay shares)."""
    return judged.kinds_for(spec.rules, phase)


def runs_inline(spec: PolicySpec, phase: str, kind: str) -> bool:
    """Whether the agent waits for this judgement.

    The local verifier is CPU-only and takes milliseconds, so it always answers inline and its
    block really blocks. The LLM judge is a network call: it runs inline only where the policy
    blocks on it at mid_execution; otherwise it runs in Celery and its evaluation joins the run
    when it arrives (docs/grounding-policies.md: "A score below threshold adds to the violation warnings").
    """
    if kind in (VERIFIER, CONSISTENCY):
        return True
    return phase == "mid_execution" and spec.rules.get("action_on_violation") == "block"


def _evaluation(spec: PolicySpec, phase: str, action: str, reason: str, metadata: dict, source: str) -> Evaluation:
    return Evaluation(
        policy_id=spec.id,
        policy_name=spec.name,
        category=spec.category,
        policy_version=spec.version,
        phase=phase,
        action=action,
        reason=reason,
        metadata=metadata,
        source=source,
        abstention_response=(spec.rules.get("abstention_response") or None) if action == "block" else None,
        shadow=spec.mode == "shadow",  # a shadow policy's judge is recorded, never enforced
    )


def _allowed_base_url(url: str | None) -> str | None:
    """A tenant-set base URL the server may call (core/outbound.py; checked again on connect)."""
    if not url:
        return None
    outbound.check_url(url, resolve_names=False)
    return url


# What the tenant sees of a provider call: the status and a fixed message, never what the upstream
# sent. A base URL pointed at some other service would otherwise read that service's answers back
# through the evaluation (issue 14). The full error goes to the server log only (judges.llm).
# keyed by a result's "status" (None when it has none: no fixed message)
_FIXED_MESSAGES: dict[str | None, str] = {
    llm.STATUS_OK: "",
    llm.STATUS_UNPARSEABLE: "Unparseable judge response; defaulted to 0.5",
    llm.STATUS_ERROR: "The provider call failed",
    llm.STATUS_TIMEOUT: "The provider did not answer within the time budget",
    llm.STATUS_NO_API_KEY: "No API key configured for the provider",
}
_HTTP_STATUS = re.compile(r"\bHTTP (\d{3})\b")


def tenant_visible(result: dict) -> dict:
    """A judge result's metadata as stored and shown: upstream text (answer, error body) removed."""
    error = str(result.get("error") or "")
    status = result.get("status")
    visible = {**result, "raw_text": "", "error": _FIXED_MESSAGES.get(status, "The provider call failed")}
    if status == llm.STATUS_ERROR:
        match = _HTTP_STATUS.search(error)
        visible["http_status"] = int(match.group(1)) if match else None
        if "OutboundRefused" in error:
            visible["error"] = "Refused: the base URL points at an address the server does not call"
    return visible


_fmt = judged.round_score


class CredentialsRefused(Exception):
    """The tenant's base URL secret names an address the server does not call (core/outbound.py)."""


def provider_credentials(*, tenant: Tenant, provider: str) -> tuple[str | None, str | None]:
    """(API key, base URL) of the tenant for this provider; raises CredentialsRefused for a refused URL."""
    api_key = secret_value(tenant=tenant, name=llm.SECRET_FOR_PROVIDER[provider])
    try:
        base_url = _allowed_base_url(secret_value(tenant=tenant, name=llm.BASE_URL_SECRET[provider]))
    except outbound.OutboundRefused as exc:
        raise CredentialsRefused(f"{llm.BASE_URL_SECRET[provider]} refused: {exc}") from exc
    return api_key, base_url


def cached_judgement(*, tenant: Tenant, key: str) -> dict | None:
    """A stored provider answer for this exact request (per tenant, by hash), or None."""
    cached = Judgement.objects.filter(tenant=tenant, key=key).first()
    return cached.result if cached is not None else None


def store_judgement(*, tenant: Tenant, key: str, model: str, result: dict) -> None:
    try:
        with transaction.atomic():
            Judgement.objects.create(tenant=tenant, key=key, model=model, result=result)
    except IntegrityError:
        pass  # a concurrent identical request was stored first; same answer


def llm_evaluation(*, tenant: Tenant, spec: PolicySpec, phase: str, evidence: Evidence, timeout: float) -> Evaluation:
    rules = spec.rules
    model = rules["llm_grounding_model"]
    provider = llm.provider_for_model(model)

    def skipped(reason: str, meta: dict) -> Evaluation:
        logger.warning("LLM judge skipped for policy %s: %s", spec.id, reason)
        return _evaluation(
            spec,
            phase,
            "allow",
            f"LLM judge skipped: {reason}",
            {"judge": meta, "warnings": [f"LLM judge skipped: {reason}"]},
            LLM,
        )

    if not evidence.output.strip():
        return _evaluation(
            spec,
            phase,
            "allow",
            "LLM judge skipped: no output to judge",
            {"judge": {"status": "no_output", "model": model}},
            LLM,
        )
    try:
        api_key, base_url = provider_credentials(tenant=tenant, provider=provider)
    except CredentialsRefused as exc:
        return skipped(str(exc), {"status": "error", "model": model, "provider": provider})
    if not api_key:
        name = llm.SECRET_FOR_PROVIDER[provider]
        return skipped(f"no {name} configured", {"status": llm.STATUS_NO_API_KEY, "model": model, "provider": provider})

    criteria = rules.get("llm_grounding_criteria") or ""
    key = llm.request_cache_key(
        model=model,
        output=evidence.output,
        citations=list(evidence.citations),
        sources=list(evidence.sources),
        criteria=criteria,
    )
    cached = cached_judgement(tenant=tenant, key=key)
    if cached is not None:
        meta = {**tenant_visible(cached), "cached": True}
    else:
        result = llm.judge(
            model=model,
            output=evidence.output,
            citations=list(evidence.citations),
            sources=list(evidence.sources),
            criteria=criteria,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=1,
        )
        meta = {**tenant_visible(result.to_metadata()), "cached": False}
        if result.status in (llm.STATUS_OK, llm.STATUS_UNPARSEABLE):
            store_judgement(tenant=tenant, key=key, model=model, result=tenant_visible(result.to_metadata()))
    status, score = meta.get("status"), meta.get("score")
    if status == llm.STATUS_TIMEOUT:
        return skipped(f"timed out after {timeout:.1f}s", meta)
    if score is None:
        return skipped("provider error", meta)
    score = _fmt(score)
    action, reason, threshold = judged.llm_verdict(rules, score)
    # The criteria are kept so that replay reuses this score only for a policy asking the same.
    metadata = {"judge": meta, "score": score, "threshold": threshold, "criteria": criteria}
    return _evaluation(spec, phase, action, reason, metadata, LLM)


def verifier_evaluation(
    *, tenant: Tenant, spec: PolicySpec, phase: str, evidence: Evidence, deadline: float | None = None
) -> Evaluation:
    from .verification import verifier_outcome

    action, reason, metadata = verifier_outcome(rules=spec.rules, evidence=evidence, tenant=tenant, deadline=deadline)
    return _evaluation(spec, phase, action, reason, metadata, VERIFIER)


def consistency_evaluation(*, spec: PolicySpec, phase: str, evidence: Evidence) -> Evaluation:
    from .verification import consistency_outcome

    action, reason, metadata = consistency_outcome(rules=spec.rules, output=evidence.output)
    return _evaluation(spec, phase, action, reason, metadata, VERIFIER)


def judge(
    *, tenant: Tenant, spec: PolicySpec, phase: str, kind: str, evidence: Evidence, deadline: float | None = None
) -> Evaluation:
    """One judgement. With a deadline (inline), the LLM (the judge, or the verifier's escalation of its
    undecided claims) gets what is left of the budget."""
    if deadline is not None:
        timeout = max(0.5, deadline - time.monotonic())
    else:
        timeout = settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS
    started = time.perf_counter()
    if kind == LLM:
        evaluation = llm_evaluation(tenant=tenant, spec=spec, phase=phase, evidence=evidence, timeout=timeout)
    elif kind == CONSISTENCY:
        evaluation = consistency_evaluation(spec=spec, phase=phase, evidence=evidence)
    else:
        evaluation = verifier_evaluation(tenant=tenant, spec=spec, phase=phase, evidence=evidence, deadline=deadline)
    metrics.observe_judgement(
        kind=kind, metadata=evaluation.metadata, seconds=time.perf_counter() - started, tenant=tenant
    )
    return evaluation
