"""How well sources support an output, as the local verifier measures it (docs/score-audit.md).

A leaf like the rest of `judges`: text in, numbers out. The score audit compares these measures with
the grounding scores an agent reports about itself.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from .verification import config_for
from .verifier import SUPPORTED, ClaimVerdict, check_grounding

# Each report's per-source measure costs one verifier pass per source: enough to pair the scores an
# agent usually reports, bounded so one report cannot hold a worker.
MAX_SOURCES_MEASURED = 10


@dataclass(frozen=True)
class SupportMeasure:
    overall: float | None  # None when the output has no factual claim to measure
    per_source: tuple[float | None, ...]
    claims: tuple[dict, ...]


def support_probability(claim: ClaimVerdict) -> float:
    """The probability that the sources support the claim.

    The verifier's calibrated probability where it gives one (its learned combiner, docs/verifier.md).
    Otherwise (the NLI path) a supported claim's confidence is that probability, and a claim judged
    otherwise leaves only the remaining mass, shared with the third verdict.
    """
    if claim.probabilities and SUPPORTED in claim.probabilities:
        return float(claim.probabilities[SUPPORTED])
    if claim.verdict == SUPPORTED:
        return float(claim.confidence)
    return (1.0 - float(claim.confidence)) / 2


def _mean(claims: Sequence[ClaimVerdict]) -> float | None:
    if not claims:
        return None
    return round(sum(support_probability(c) for c in claims) / len(claims), 4)


def measure_support(output: str, sources: Sequence[dict]) -> SupportMeasure:
    config = config_for()
    overall = check_grounding(output, list(sources), config)
    per_source = tuple(
        _mean(check_grounding(output, [source], config).claims) for source in sources[:MAX_SOURCES_MEASURED]
    )
    return SupportMeasure(
        overall=_mean(overall.claims),
        per_source=per_source,
        claims=tuple(claim.to_dict() for claim in overall.claims),
    )
