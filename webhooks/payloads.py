"""The JSON a delivery POSTs: Groundrule's envelope, or Slack's shape for a Slack incoming webhook."""

from urllib.parse import urlsplit

SLACK_HOSTS = {"hooks.slack.com", "hooks.slack-gov.com"}


def is_slack(url: str) -> bool:
    parts = urlsplit(url)
    return (parts.hostname or "").lower() in SLACK_HOSTS and parts.path.startswith("/services/")


def envelope(*, delivery_id: str, event: str, tenant_slug: str, created_at: str, data: dict) -> dict:
    return {"id": delivery_id, "event": event, "created_at": created_at, "tenant": tenant_slug, "data": data}


def _summary(event: str, tenant_slug: str, data: dict) -> str:
    if event.startswith("decision."):
        return (
            f"[{tenant_slug}] {data.get('action', '').upper()} at {data.get('phase')} for agent "
            f"{data.get('agent_name')} (run {data.get('run_id')}): {data.get('reason') or 'no reason given'}"
        )
    if event.startswith("review."):
        return (
            f"[{tenant_slug}] Violation {data.get('evaluation_id')} ({data.get('policy_name')}, "
            f"{data.get('action')}) {data.get('review_state')} by {data.get('reviewed_by')}"
        )
    if event == "audit.checkpoint":
        return (
            f"[{tenant_slug}] Audit checkpoint: seq {data.get('seq')}, hash {str(data.get('hash'))[:16]}…, "
            f"signed at {data.get('signed_at')} by key {data.get('key_id')}"
        )
    return f"[{tenant_slug}] {event}: {data.get('message') or data}"


def slack(body: dict) -> dict:
    """Slack incoming webhooks take ``text`` (and optional blocks); the envelope rides along for tools
    that read it, Slack ignores the rest."""
    text = _summary(body["event"], body["tenant"], body["data"])
    return {
        "text": text,
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{body['event']}*\n{text}"}}],
    }


def for_url(url: str, body: dict) -> dict:
    return slack(body) if is_slack(url) else body
