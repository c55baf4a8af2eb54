import logging
import re
import uuid

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.http import JsonResponse

from .context import request_id_var

logger = logging.getLogger("groundrule.api")

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class RequestIdMiddleware:
    """Tags each request with an id (the caller's X-Request-ID when sane), echoed back and audited."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = request_id
        return response


def error_json(request, status: int, detail: str) -> JsonResponse:
    """The API's error body for a failure that names no field: what went wrong, and which request."""
    return JsonResponse({"detail": detail, "request_id": getattr(request, "request_id", "")}, status=status)


class BodySizeLimitMiddleware:
    """Refuses oversized bodies with 413 before anything reads them.

    Django's own limit raises a 400 deep inside request parsing; a client deserves to know the
    difference between "malformed" and "too large".
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_json(request, 400, "Invalid Content-Length header.")
        if limit is not None and length > limit:
            return error_json(request, 413, f"Request body too large: {length} bytes, the limit is {limit} bytes.")
        if not length and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            # Django reads a WSGI body only up to Content-Length, so a chunked body arrived empty and
            # the call "succeeded" with nothing in it (a grounding report without its scores).
            return error_json(request, 411, "Send the body with a Content-Length; chunked bodies are not supported.")
        return self.get_response(request)


# The database went away under a request (a terminated connection, a failover, SQLite still locked
# after the busy timeout): the request may be retried, which a client should know from the status.
RETRY_AFTER_SECONDS = 1


class ApiErrorsAsJsonMiddleware:
    """On /api/ paths every failure answers JSON ``{"detail", "request_id"}``, never an HTML page.

    * a database that is unavailable (``OperationalError``/``InterfaceError``: connection terminated,
      database locked) is a 503 with ``Retry-After``; the broken connection is closed so the next
      request opens a fresh one;
    * any other unhandled exception is a 500, logged with its traceback and the request id;
    * an HTML error page produced elsewhere (Django's 404 for an unknown URL, a CSRF 403) is
      replaced by the same JSON shape with its status kept.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    @staticmethod
    def _is_api(request) -> bool:
        return request.path.startswith("/api/")

    def __call__(self, request):
        response = self.get_response(request)
        if (
            self._is_api(request)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
            and not getattr(response, "streaming", False)
        ):
            return self._json(request, response.status_code, response.reason_phrase or "Error", response)
        return response

    def process_exception(self, request, exception):
        if not self._is_api(request):
            return None
        if isinstance(exception, (OperationalError, InterfaceError)):
            logger.warning(
                "database unavailable during %s %s (request %s): %s",
                request.method,
                request.path,
                getattr(request, "request_id", ""),
                type(exception).__name__,
            )
            for conn in connections.all(initialized_only=True):
                conn.close_if_unusable_or_obsolete()
            response = self._json(request, 503, "The database is unavailable; retry shortly.")
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response
        logger.error(
            "unhandled error in %s %s (request %s)",
            request.method,
            request.path,
            getattr(request, "request_id", ""),
            exc_info=exception,
        )
        return self._json(request, 500, "Internal server error.")

    @staticmethod
    def _json(request, status: int, detail: str, original=None) -> JsonResponse:
        response = error_json(request, status, detail)
        if original is not None:
            for header in ("Retry-After", "Allow", "WWW-Authenticate"):
                if header in original:
                    response[header] = original[header]
        return response


# No inline script anywhere (templates load static/js only), so a stored payload that got into a
# page still could not run. Inline style attributes remain in a few templates: 'unsafe-inline' is
# allowed for styles only. htmx is configured in base.html not to inject styles or evaluate code.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
