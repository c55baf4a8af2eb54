"""The decision the server returns for every phase, as plain frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FAIL_OPEN_REASON = "Groundrule unreachable; failing open"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One policy's verdict within a decision."""

    policy_id: int | None
    policy_name: str
    category: str
    phase: str
    action: str
    reason: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "engine"
    shadow: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        return cls(
            policy_id=data.get("policy_id"),
            policy_name=data.get("policy_name", ""),
            category=data.get("category", ""),
            phase=data.get("phase", ""),
            action=data.get("action", "allow"),
            reason=data.get("reason", ""),
            metadata=dict(data.get("metadata") or {}),
            source=data.get("source", "engine"),
            shadow=bool(data.get("shadow", False)),
        )


@dataclass(frozen=True, slots=True)
class Decision:
    """allow / warn / block for one phase (`before_workflow`, `mid_execution`, `after_workflow`).

    `failed_open` is true for the stand-in decision the SDK returns when the server was
    unreachable and the client fails open; no policy was evaluated.

    `shadow_evaluations` are the verdicts of policies in shadow mode: what they would have done.
    They never change `action`, and the server leaves them out of `evaluations`.

    `grounding_context` (before_workflow only) is what the server says may reach the model:
    ``{"policy_id", "policy_name", "rules": {context_mode, canonical_when_available,
    include_retrieved_text, max_context_chars}}``; see `Run.decide_grounding`.
    """

    action: str
    phase: str
    reason: str
    abstention_response: str | None = None
    evaluations: tuple[Evaluation, ...] = ()
    shadow_evaluations: tuple[Evaluation, ...] = ()
    failed_open: bool = False
    grounding_context: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        return cls(
            action=data["action"],
            phase=data.get("phase", ""),
            reason=data.get("reason", ""),
            abstention_response=data.get("abstention_response"),
            evaluations=tuple(Evaluation.from_dict(e) for e in data.get("evaluations") or ()),
            shadow_evaluations=tuple(Evaluation.from_dict(e) for e in data.get("shadow_evaluations") or ()),
            grounding_context=data.get("grounding_context"),
        )

    @classmethod
    def fail_open(cls, phase: str) -> Decision:
        return cls(action="allow", phase=phase, reason=FAIL_OPEN_REASON, failed_open=True)

    @property
    def allowed(self) -> bool:
        return self.action == "allow"

    @property
    def warned(self) -> bool:
        return self.action == "warn"

    @property
    def blocked(self) -> bool:
        return self.action == "block"
