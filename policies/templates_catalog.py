"""Starting points for New Policy: the example policies of the grounding documentation (docs/grounding-policies.md),
then the documentation's examples for context decisions, citations, provenance and the local verifier.

Each pre-fills the form; nothing here is stored until the admin saves. The rules are validated
by the category like any submission (tests check every template is valid).
"""

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PolicyTemplate:
    slug: str
    name: str
    category: str
    summary: str
    rules: dict = field(default_factory=dict)

    @property
    def action(self) -> str:
        """The strongest action the template sets: the policy's own, or the verifier's."""
        actions = [
            self.rules.get(key) for key in ("action_on_violation", "contradiction_action", "unverifiable_action")
        ]
        return "block" if "block" in actions else "warn"

    def rule_items(self) -> list[tuple[str, str]]:
        """The thresholds as JSON values, for the template cards (the action has its own badge)."""
        return [
            (key, json.dumps(value))
            for key, value in self.rules.items()
            if key not in ("action_on_violation", "abstention_response")
        ]


TEMPLATES: tuple[PolicyTemplate, ...] = (
    PolicyTemplate(
        slug="strict-research-assistant",
        name="Strict Research Assistant",
        category="grounding",
        summary="Block any output with low grounding scores, missing citations, or low confidence.",
        rules={
            "require_source_grounding": True,
            "min_grounding_score": 0.8,
            "min_citations": 2,
            "max_unsupported_claims": 0,
            "abstention_threshold": 0.5,
            "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
            "action_on_violation": "block",
        },
    ),
    PolicyTemplate(
        slug="medical-qa",
        name="Medical Q&A",
        category="grounding",
        summary="High accuracy standards: abstain rather than guess.",
        rules={
            "require_source_grounding": True,
            "min_grounding_score": 0.9,
            "min_citations": 3,
            "max_unsupported_claims": 0,
            "abstention_threshold": 0.7,
            "abstention_response": "I cannot provide a reliable answer based on available evidence. "
            "Please consult a qualified professional.",
            "action_on_violation": "block",
        },
    ),
    PolicyTemplate(
        slug="lenient-rag-agent",
        name="Lenient RAG Agent",
        category="grounding",
        summary="Warn on grounding issues but do not block execution during development.",
        rules={
            "require_source_grounding": False,
            "min_grounding_score": 0.6,
            "min_citations": 1,
            "max_unsupported_claims": 3,
            "abstention_threshold": None,
            "action_on_violation": "warn",
        },
    ),
    PolicyTemplate(
        slug="citation-only-enforcement",
        name="Citation-Only Enforcement",
        category="grounding",
        summary="Require citations but do not enforce per-claim scores (when scores are not available).",
        rules={
            "require_source_grounding": True,
            "min_citations": 1,
            "max_unsupported_claims": 2,
            "action_on_violation": "block",
        },
    ),
    PolicyTemplate(
        slug="rag-pipeline",
        name="RAG Pipeline",
        category="grounding",
        summary="Ignore irrelevant tail results below a relevance floor; every relevant score must pass.",
        rules={
            "min_grounding_score": 0.7,
            "score_relevance_floor": 0.5,
            "score_eval_mode": "all",
            "min_citations": 1,
            "action_on_violation": "block",
        },
    ),
    PolicyTemplate(
        slug="lenient-average-based",
        name="Lenient Average-Based",
        category="grounding",
        summary="Warn when the mean of the relevant scores falls below the threshold.",
        rules={
            "min_grounding_score": 0.7,
            "score_relevance_floor": 0.4,
            "score_eval_mode": "average",
            "action_on_violation": "warn",
        },
    ),
    # docs/grounding-context.md, docs/citations.md, docs/retrieval-provenance.md and docs/judges.md.
    PolicyTemplate(
        slug="quoted-retrieved-citations",
        name="Quoted, retrieved citations",
        category="grounding",
        summary="Every citation quotes its source, the quote is really there, and the source is one the run "
        "retrieved; at most six.",
        rules={
            "citation_quotes": "required",
            "citations_must_resolve": True,
            "max_citations": 6,
            "min_citations": 1,
            "action_on_violation": "block",
        },
    ),
    PolicyTemplate(
        slug="attachments-first",
        name="Attachments first",
        category="grounding",
        summary="Send canonical documents instead of chunk text when they were prepared, and cut the text "
        "at 2,000 characters.",
        rules={
            "context_mode": "hybrid",
            "canonical_when_available": "prefer_attachments",
            "max_context_chars": 2000,
        },
    ),
    PolicyTemplate(
        slug="rag-with-provenance",
        name="RAG with provenance",
        category="grounding",
        summary="Citations must resolve to what the run retrieved; scores below the 0.5 relevance floor are ignored.",
        rules={
            "score_relevance_floor": 0.5,
            "min_grounding_score": 0.7,
            "citations_must_resolve": True,
            "action_on_violation": "warn",
        },
    ),
    PolicyTemplate(
        slug="self-consistent-answers",
        name="Self-consistent answers",
        category="grounding",
        summary="Block an answer whose own claims contradict each other (numbers, dates, names, negation).",
        rules={
            "factual_consistency_check": True,
            "contradiction_threshold": 0.7,
            "action_on_violation": "block",
            "abstention_response": "Let me double-check that before answering.",
        },
    ),
    PolicyTemplate(
        slug="local-verifier",
        name="Local verifier",
        category="grounding",
        summary="Check each claim of the final answer against the reported sources on the local verifier: "
        "block contradictions, warn when over half the claims are unverifiable.",
        rules={
            "nli_check": True,
            "nli_phase": "after_workflow",
            "entailment_threshold": 0.7,
            "max_unverifiable_ratio": 0.5,
            "contradiction_action": "block",
            "unverifiable_action": "warn",
        },
    ),
)

BY_SLUG = {t.slug: t for t in TEMPLATES}


def template_for(slug: str | None) -> PolicyTemplate | None:
    return BY_SLUG.get(slug or "")


def templates_for_category(category: str) -> list[PolicyTemplate]:
    return [t for t in TEMPLATES if t.category == category]
