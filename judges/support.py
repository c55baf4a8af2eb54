"""How well sources support an output, as the local verifier measures it (docs/score-audit.md).

A leaf like the rest of `judges`: text in, numbers out. The score audit compares these measures with
the grounding scores an agent reports about itself.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from tenants.models import Tenant

from .budget import as_paragraphs, claims_within, work_warnings
from .escalation import escalate, options_from
from .verification import config_for
from .verifier import SUPPORTED, ClaimVerdict, check_grounding, extract_claims
from .verifier.facts.work import Work

# Each report's per-source measure costs one verifier pass per source: enough to pair the scores an
# agent usually reports, bounded so one report cannot hold a worker.
MAX_SOURCES_MEASURED = 10


@dataclass(frozen=True)
class SupportMeasure:
    overall: float | None  # None when the output has no factual claim to measure
    per_source: tuple[float | None, ...]
    claims: tuple[dict, ...]
    #: the LLM escalation's call record when the governing policy asked for one, else None
    escalation: dict | None = None
    warnings: tuple[str, ...] = ()


def support_probability(claim: ClaimVerdict) -> float:
    """The probability that the sources support the claim.

    A claim the LLM escalation decided: the model's stated confidence in "supported", or what its
    confidence in another verdict leaves, shared as below. Otherwise the verifier's calibrated
    probability where it gives one (its learned combiner, docs/verifier.md); on the NLI path a
    supported claim's confidence is that probability, and a claim judged otherwise leaves only the
    remaining mass, shared with the third verdict.
    """
    if claim.escalated:
        return float(claim.confidence) if claim.verdict == SUPPORTED else (1.0 - float(claim.confidence)) / 2
    if claim.probabilities and SUPPORTED in claim.probabilities:
        return float(claim.probabilities[SUPPORTED])
    if claim.verdict == SUPPORTED:
        return float(claim.confidence)
    return (1.0 - float(claim.confidence)) / 2


def _mean(claims: Sequence[ClaimVerdict]) -> float | None:
    if not claims:
        return None
    return round(sum(support_probability(c) for c in claims) / len(claims), 4)


def measure_support(
    output: str, sources: Sequence[dict], *, tenant: Tenant | None = None, escalation_rules: dict | None = None
) -> SupportMeasure:
    """The support of ``output`` by all ``sources`` together and by each of them.

    With ``escalation_rules`` (a governing policy's rules with ``nli_escalation: "llm"``) and the
    tenant, the overall measure's undecided claims are escalated to the LLM, in the background's time
    budget; the per-source measures stay the local verifier's (one LLM call per source would multiply
    the cost of every audit).
    """
    config = config_for()
    warnings: list[str] = []
    # the claims measured are bounded as a check's are (judges/budget.py, VERIFIER_MAX_CLAIM_CHARS):
    # a claim dense with values costs its values times each sentence's, eleven passes here
    claims = extract_claims(output)
    kept = claims_within(claims, settings.VERIFIER_MAX_CLAIM_CHARS)
    if kept < len(claims):
        output = as_paragraphs(claims[:kept])
        warnings.append(f"Score audit measured the first {kept} of {len(claims)} claims (VERIFIER_MAX_CLAIM_CHARS).")
    # and each pass's alignment by the work budget (judges/verifier/facts/work.py), as a check's is
    overall = check_grounding(output, list(sources), config, work=Work(settings.VERIFIER_MAX_WORK))
    warnings += work_warnings(overall)
    escalation: dict | None = None
    options = options_from(escalation_rules)
    if options is not None and tenant is not None:
        overall, escalation, escalation_warnings = escalate(
            tenant=tenant, check=overall, sources=list(sources), options=options, config=config, deadline=None
        )
        warnings += escalation_warnings
    per_source = tuple(
        _mean(check_grounding(output, [source], config, work=Work(settings.VERIFIER_MAX_WORK)).claims)
        for source in sources[:MAX_SOURCES_MEASURED]
    )
    return SupportMeasure(
        overall=_mean(overall.claims),
        per_source=per_source,
        claims=tuple(claim.to_dict() for claim in overall.claims),
        escalation=escalation,
        warnings=tuple(warnings),
    )
