"""Per-request context that services read without a request object (Celery has none)."""

from contextvars import ContextVar

request_id_var: ContextVar[str] = ContextVar("request_id", default="")


def current_request_id() -> str:
    return request_id_var.get()
