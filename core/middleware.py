import re
import uuid

from django.conf import settings
from django.http import JsonResponse

from .context import request_id_var

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
            return JsonResponse({"detail": "Invalid Content-Length header."}, status=400)
        if limit is not None and length > limit:
            return JsonResponse(
                {"detail": f"Request body too large: {length} bytes, the limit is {limit} bytes."}, status=413
            )
        if not length and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            # Django reads a WSGI body only up to Content-Length, so a chunked body arrived empty and
            # the call "succeeded" with nothing in it (a grounding report without its scores).
            return JsonResponse(
                {"detail": "Send the body with a Content-Length; chunked bodies are not supported."}, status=411
            )
        return self.get_response(request)
