"""One error shape for the API: 4xx JSON naming the field, never a 500 for bad input."""

import logging

from django.core.exceptions import (
    PermissionDenied,
    RequestDataTooBig,
    SuspiciousOperation,
)
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.views.decorators.csrf import csrf_exempt
from django_scopes import ScopeError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import Conflict, InvalidInput
from core.middleware import error_json

logger = logging.getLogger("groundrule.api")


def exception_handler(exc, context):
    response = _answer(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        # A failure that is not about named fields says which request it was, in the body as in the
        # X-Request-ID header, so that a client's log line finds the server's (docs/reliability.md).
        # Field errors keep their shape: every key of theirs names a field of the request.
        request = context.get("request")
        response.data.setdefault("request_id", getattr(request, "request_id", "") if request is not None else "")
    return response


def _answer(exc, context):
    if isinstance(exc, InvalidInput):
        return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, Conflict):
        return Response({"detail": exc.detail}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DjangoValidationError):
        data = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(data, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": "Request body too large."}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, SuspiciousOperation):
        return Response({"detail": "Bad request."}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ScopeError):
        # A bug, not a user error: never let it leak data, and say so loudly in the logs.
        logger.error("unscoped query in API view %s", context.get("view"))
        return Response({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, (Http404, PermissionDenied)):
        return drf_exception_handler(exc, context)
    if isinstance(exc, exceptions.ParseError):
        return Response({"detail": f"Malformed JSON body: {exc.detail}"}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


@csrf_exempt  # a POST to a mistyped path is a 404 too, not a CSRF page
def not_found(request, *args, **kwargs):
    """Any /api/ path that names no endpoint (a run id of "-1", a typo): JSON, as the API answers.

    Django's own 404 is an HTML page, which an API client cannot read and the schema cannot describe.
    """
    return error_json(request, status.HTTP_404_NOT_FOUND, "Not found.")
