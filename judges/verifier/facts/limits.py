"""A claim that a value goes over, or stays within, a limit the sources state (docs/verifier.md,
"How a verdict is made", step 2): "a user who needs 1,500 API calls a day would go over the
limit" against "the free tier allows 1,000 API calls per day" is the source's 1,000 read as the
limit, and 1,500 is over it. Without this, 1,500 against 1,000 was a number mismatch."""

from __future__ import annotations

import re

from .analysis import Analysis
from .fact import Fact

_LIMIT = r"(?:\w+\s+){0,2}?(?:limit|quota|cap|allowance|maximum|threshold|allotment)s?\b"
_OVER = re.compile(
    rf"\b(?:go(?:es|ing)?|went|be|is|are|run(?:s|ning)?)\s+(?:over|above|beyond|past)\s+(?:the|its|their|your|this|that)\s+{_LIMIT}"
    rf"|\b(?:exceed(?:s|ed|ing)?|surpass(?:es|ed|ing)?|break(?:s|ing)?)\s+(?:the|its|their|your|this|that)\s+{_LIMIT}"
    r"|\bmore than (?:is |are )?(?:allowed|permitted|included)\b"
)
_WITHIN = re.compile(
    rf"\b(?:within|under|below|inside)\s+(?:the|its|their|your|this|that)\s+{_LIMIT}"
    r"|\bno more than (?:is |are )?(?:allowed|permitted|included)\b"
)


def limit_side(claim: Analysis) -> str | None:
    """ "over" or "within" when the claim sets its value against a limit; None otherwise."""
    key = ("limit side",)
    if key not in claim.memo:
        low = claim.text_low
        claim.memo[key] = "over" if _OVER.search(low) else "within" if _WITHIN.search(low) else None
    return claim.memo[key]  # type: ignore[return-value]


def against_limit(cf: Fact, sf: Fact, side: str) -> bool:
    """Whether the claim's value ``cf`` is on the ``side`` it says of the source's limit ``sf``
    (a value of the same kind that the source states as is or as "up to")."""
    if cf.kind != "quantity" or sf.kind != "quantity" or cf.dim != sf.dim or sf.bound not in ("eq", "le"):
        return False
    if cf.noun and sf.noun and cf.noun != sf.noun:
        return False
    over = cf.num_value > sf.num_value
    return over if side == "over" else not over
