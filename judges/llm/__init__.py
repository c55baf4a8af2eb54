"""The LLM grounding judge (docs/grounding-policies.md, "LLM Grounding Judge"): a pure library, no Django.

    from judges.llm import judge, provider_for_model, SECRET_FOR_PROVIDER, BASE_URL_SECRET

    provider = provider_for_model(rules["llm_grounding_model"])        # "openai" | "anthropic" | "groq"
    result = judge(model=..., output=..., citations=[...], sources=[...], criteria=...,
                   api_key=secret(SECRET_FOR_PROVIDER[provider]),
                   base_url=secret(BASE_URL_SECRET[provider]), timeout=10.0, max_retries=1)
    result.status, result.score, result.to_metadata()

Modules: ``prompt`` (the prompt and its size limits), ``parse`` (reading the score), ``pricing``
(cost estimates), ``providers`` (the SDK calls, retries, time budget, client cache), ``claims``
(the prompt and parser of the local verifier's escalation of undecided claims).
"""

from .claims import (
    LLMVerdict,
    build_claims_prompt,
    claim_cache_key,
    max_tokens_for,
    parse_verdicts,
)
from .parse import NEUTRAL_SCORE, parse_score
from .pricing import PRICES, estimate_cost, price_for_model
from .prompt import PROMPT_VERSION, SCORE_SCALE, build_prompt, cache_key
from .providers import (
    BASE_URL_SECRET,
    PROVIDERS,
    SECRET_FOR_PROVIDER,
    STATUS_ERROR,
    STATUS_NO_API_KEY,
    STATUS_OK,
    STATUS_TIMEOUT,
    STATUS_UNPARSEABLE,
    STATUSES,
    Completion,
    JudgeResult,
    clear_client_cache,
    complete,
    judge,
    preload_sdks,
    provider_for_model,
    request_cache_key,
)

__all__ = [
    "BASE_URL_SECRET",
    "NEUTRAL_SCORE",
    "PRICES",
    "PROMPT_VERSION",
    "PROVIDERS",
    "SCORE_SCALE",
    "SECRET_FOR_PROVIDER",
    "STATUSES",
    "STATUS_ERROR",
    "STATUS_NO_API_KEY",
    "STATUS_OK",
    "STATUS_TIMEOUT",
    "STATUS_UNPARSEABLE",
    "Completion",
    "JudgeResult",
    "LLMVerdict",
    "build_claims_prompt",
    "build_prompt",
    "cache_key",
    "claim_cache_key",
    "clear_client_cache",
    "complete",
    "estimate_cost",
    "judge",
    "max_tokens_for",
    "parse_score",
    "parse_verdicts",
    "preload_sdks",
    "price_for_model",
    "provider_for_model",
    "request_cache_key",
]
