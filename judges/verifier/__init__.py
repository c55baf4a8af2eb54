"""Local grounding verifier (pure library: no Django, configuration comes in as arguments).

Public API::

    from judges.verifier import VerifierConfig, check_grounding, find_contradictions

    result = check_grounding("The limit is 1000 requests per minute.",
                             ["Premium users get 1,000 requests per minute."])
    result.to_dict()  # the verifier contract's (docs/verifier.md) check_grounding shape, snake_case

See :mod:`judges.verifier.verifier` for the decision rules of the default
(embedding + fact alignment) path and the NLI path.
"""

from .claims import extract_claims, split_sentences
from .embedder import Embedder, EmbedderUnavailable, get_embedder, load_time_ms
from .nli import NLIModel, NLIModelError, get_nli_model
from .verifier import (
    CONTRADICTED,
    SUPPORTED,
    UNVERIFIABLE,
    ClaimVerdict,
    GroundingCheck,
    SourceMatch,
    VerifierConfig,
    check_grounding,
    find_contradictions,
)

__all__ = [
    "VerifierConfig",
    "check_grounding",
    "find_contradictions",
    "GroundingCheck",
    "ClaimVerdict",
    "SourceMatch",
    "SUPPORTED",
    "CONTRADICTED",
    "UNVERIFIABLE",
    "extract_claims",
    "split_sentences",
    "Embedder",
    "EmbedderUnavailable",
    "get_embedder",
    "load_time_ms",
    "NLIModel",
    "NLIModelError",
    "get_nli_model",
]
