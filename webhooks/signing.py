"""X-Groundrule-Signature: ``t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the secret>``.

The timestamp is signed with the body, so a receiver that also checks it is recent (``verify``'s
``tolerance``) cannot be fooled by a replayed old delivery.
"""

import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Groundrule-Signature"
EVENT_HEADER = "X-Groundrule-Event"
DELIVERY_HEADER = "X-Groundrule-Delivery"
DEFAULT_TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(
    secret: str, header: str, body: bytes, *, tolerance: int = DEFAULT_TOLERANCE_SECONDS, now: float | None = None
) -> bool:
    """What a receiver does: True if ``header`` signs ``body`` with ``secret`` recently enough."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((now if now is not None else time.time()) - timestamp) > tolerance:
        return False
    expected = signature(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))
