"""Starting points for New Policy: the example policies of the grounding documentation (seed 002).

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
        return self.rules.get("action_on_violation", "warn")

    def rule_items(self) -> list[tuple[str, str]]:
        """The thresholds as JSON values, for the template cards (the action has its own badge)."""
        return [(key, json.dumps(value)) for key, value in self.rules.items()
                if key not in ("action_on_violation", "abstention_response")]


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
)

BY_SLUG = {t.slug: t for t in TEMPLATES}


def template_for(slug: str | None) -> PolicyTemplate | None:
    return BY_SLUG.get(slug or "")


def templates_for_category(category: str) -> list[PolicyTemplate]:
    return [t for t in TEMPLATES if t.category == category]
