"""What context may reach the model: the context decision (docs/grounding-context.md), on the grounding rules.

The four context rules of the grounding category map onto the seed's ``GroundingPolicy``:

    context_mode              mode                      chunks_only | attachments_only | hybrid
    canonical_when_available  canonical.whenAvailable   prefer_attachments | augment_chunks
    include_retrieved_text    chunks.includeRetrievedText   true | false | null (unset)
    max_context_chars         chunks.maxChars           integer >= 1 | null (no limit)

The SDK carries a copy of ``decide_grounding`` (``client/groundrule/context.py``) so an agent can
decide without a round trip; a property test keeps the two identical. Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TRUNCATION_MARKER = "\n... [truncated]"
MODES = ("chunks_only", "attachments_only", "hybrid")
WHEN_AVAILABLE = ("prefer_attachments", "augment_chunks")
CONTEXT_RULES = ("context_mode", "canonical_when_available", "include_retrieved_text", "max_context_chars")
DEFAULT_CONTEXT_RULES = {
    "context_mode": "hybrid",
    "canonical_when_available": "augment_chunks",
    "include_retrieved_text": None,
    "max_context_chars": None,
}


@dataclass(frozen=True, slots=True)
class GroundingDecision:
    """The context decision's (docs/grounding-context.md) GroundingDecision, snake_case."""

    #: The retrieved text for the prompt (possibly truncated), or "" when it is excluded.
    retrieved_text_for_prompt: str
    #: Whether the canonical documents should be attached to the model call.
    include_attachments: bool
    #: Whether retrieved text is included (after the policy and truncation).
    include_retrieved_text: bool

    def to_dict(self) -> dict:
        return {
            "retrieved_text_for_prompt": self.retrieved_text_for_prompt,
            "include_attachments": self.include_attachments,
            "include_retrieved_text": self.include_retrieved_text,
        }


def context_rules(rules: Mapping[str, Any] | None) -> dict:
    """The four context rules of ``rules``, defaults for the missing ones."""
    rules = rules or {}
    return {name: rules.get(name, default) for name, default in DEFAULT_CONTEXT_RULES.items()}


def decide_grounding(
    retrieved_text: str | None = None,
    prepared_documents: Sequence[Any] | None = None,
    rules: Mapping[str, Any] | None = None,
) -> GroundingDecision:
    """Decide what goes to the model, given the retrieved text and the prepared documents.

    The seed's mode matrix, with both inputs present:

    ==========================================  ==========================  ===================
    mode                                        retrieved_text_for_prompt   include_attachments
    ==========================================  ==========================  ===================
    chunks_only                                 the text                    false
    attachments_only                            ""                          true
    attachments_only, no documents              the text (fallback)         true
    hybrid + augment_chunks                     the text                    true
    hybrid + prefer_attachments                 ""                          true
    hybrid + prefer_attachments, no documents   the text (fallback)         true
    ==========================================  ==========================  ===================

    ``include_retrieved_text``, when set, overrides the mode's choice about the text, fallbacks
    included (false keeps the text out even when no document was prepared). It never changes
    ``include_attachments``. Documents are "available" when ``prepared_documents`` is not empty.
    ``max_context_chars`` keeps the first that many characters (code points) and appends
    ``TRUNCATION_MARKER``; a text of exactly that length is left alone. An empty or missing
    text is never included, so ``include_retrieved_text`` is true exactly when
    ``retrieved_text_for_prompt`` is not empty.
    """
    rules = rules or {}
    mode = rules.get("context_mode") or "hybrid"
    when_available = rules.get("canonical_when_available") or "augment_chunks"
    override = rules.get("include_retrieved_text")
    max_chars = rules.get("max_context_chars")
    if mode not in MODES:
        raise ValueError(f"context_mode must be one of {', '.join(MODES)}; got {mode!r}")
    if when_available not in WHEN_AVAILABLE:
        raise ValueError(f"canonical_when_available must be one of {', '.join(WHEN_AVAILABLE)}; got {when_available!r}")
    if override is not None and type(override) is not bool:
        raise ValueError(f"include_retrieved_text must be true, false or None; got {override!r}")
    if max_chars is not None and (type(max_chars) is not int or max_chars < 1):
        raise ValueError(f"max_context_chars must be a whole number of at least 1; got {max_chars!r}")
    if retrieved_text is not None and not isinstance(retrieved_text, str):
        raise ValueError("retrieved_text must be a string")

    has_documents = bool(prepared_documents)
    if mode == "chunks_only":
        include_attachments, wanted = False, True
    elif mode == "attachments_only":
        # Graceful fallback: with no document resolved, the text keeps the model from starving.
        include_attachments, wanted = True, not has_documents
    else:
        include_attachments = True
        wanted = not (when_available == "prefer_attachments" and has_documents)
    if override is not None:
        wanted = override

    text = retrieved_text or ""
    if not wanted or not text:
        return GroundingDecision("", include_attachments, False)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars] + TRUNCATION_MARKER
    return GroundingDecision(text, include_attachments, True)


def context_for(specs) -> tuple[Any | None, dict]:
    """Which policy's context rules apply to an agent, and those rules.

    ``specs`` are the agent's applicable enabled policies in policy order (``PolicySpec``, with
    effective rules). The first grounding policy with any context rule away from its default
    wins, with all four of its context rules; with none, the defaults apply and the policy is
    None. Context rules are not combined across policies: a mix of two policies' modes would be
    a policy nobody wrote.

    "Away from its default" rather than "set by the admin": the dashboard form stores every rule
    it shows, so a stored default cannot be told from a deliberate one. A policy that pins the
    defaults therefore does not hide a later policy that changes them.
    """
    for spec in specs:
        # A shadow policy is evaluated, never enforced: what reaches the model is enforcement.
        if spec.category == "grounding" and spec.mode != "shadow":
            rules = context_rules(spec.rules)
            if rules != DEFAULT_CONTEXT_RULES:
                return spec, rules
    return None, dict(DEFAULT_CONTEXT_RULES)


def grounding_context(specs) -> dict:
    """The ``grounding_context`` object of the API: the rules and the policy they came from."""
    spec, rules = context_for(specs)
    return {
        "policy_id": spec.id if spec is not None else None,
        "policy_name": spec.name if spec is not None else None,
        "rules": rules,
    }
