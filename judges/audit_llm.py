"""The score audit's LLM auditor: the tenant's LLM judge scores how well a sampled report's sources
support its output (docs/score-audit.md, "The LLM auditor").

A leaf like the rest of `judges`: text in, a score and the call's record out. Off the request path, so
the call gets JUDGE_BACKGROUND_TIMEOUT_SECONDS. A score is never guessed: no key, a provider error, a
timeout or an answer without a readable score gives none, and the audit says why.
"""

from dataclasses import dataclass

from django.conf import settings

from tenants.models import Tenant

from . import llm
from .services import CredentialsRefused, cached_judgement, provider_credentials, store_judgement, tenant_visible


@dataclass(frozen=True)
class LLMMeasure:
    score: float | None
    #: status, model, provider, latency_ms, tokens, cost_usd (0 when served from the cache), cached, error
    call: dict
    #: why there is no score ("" when there is one)
    reason: str = ""


def llm_measure(*, tenant: Tenant, output: str, sources: list[dict | str], model: str) -> LLMMeasure:
    try:
        provider = llm.provider_for_model(model)
    except ValueError:
        return LLMMeasure(None, {"status": "error", "model": model}, f"unsupported model {model!r}")
    base = {"model": model, "provider": provider}
    try:
        api_key, base_url = provider_credentials(tenant=tenant, provider=provider)
    except CredentialsRefused as exc:
        return LLMMeasure(None, {**base, "status": "error"}, str(exc))
    if not api_key:
        name = llm.SECRET_FOR_PROVIDER[provider]
        return LLMMeasure(None, {**base, "status": llm.STATUS_NO_API_KEY}, f"no {name} configured")
    key = llm.request_cache_key(model=model, output=output, citations=[], sources=sources, criteria="")
    cached = cached_judgement(tenant=tenant, key=key)
    if cached is not None:
        call = {**tenant_visible(cached), "cached": True, "cost_usd": 0.0}
    else:
        result = llm.judge(
            model=model,
            output=output,
            citations=[],
            sources=sources,
            api_key=api_key,
            base_url=base_url,
            timeout=settings.JUDGE_BACKGROUND_TIMEOUT_SECONDS,
            max_retries=1,
        )
        call = {**tenant_visible(result.to_metadata()), "cached": False}
        if result.status == llm.STATUS_OK:
            store_judgement(tenant=tenant, key=key, model=model, result=tenant_visible(result.to_metadata()))
    call.pop("raw_text", None)
    status = str(call.get("status") or "")
    if status == llm.STATUS_OK and isinstance(call.get("score"), int | float):
        return LLMMeasure(round(float(call["score"]), 4), call)
    why = {
        llm.STATUS_TIMEOUT: "the LLM judge timed out",
        llm.STATUS_UNPARSEABLE: "the LLM judge's answer held no score",
    }.get(status, "provider error")
    return LLMMeasure(None, call, why)
