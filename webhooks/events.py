"""The events a webhook may subscribe to (issue 13). Names are part of the public contract."""

DECISION_BLOCK = "decision.block"
DECISION_WARN = "decision.warn"
REVIEW_CONFIRMED = "review.confirmed"
REVIEW_DISMISSED = "review.dismissed"
SCORE_AUDIT_ALERT = "score_audit.alert"
# A signed head of the tenant's audit chain (docs/security.md), published on a schedule when it moved.
AUDIT_CHECKPOINT = "audit.checkpoint"

EVENTS = (DECISION_BLOCK, DECISION_WARN, REVIEW_CONFIRMED, REVIEW_DISMISSED, SCORE_AUDIT_ALERT, AUDIT_CHECKPOINT)
