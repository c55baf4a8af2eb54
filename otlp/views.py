"""POST /v1/traces: OTLP/HTTP trace export, authenticated by a Groundrule API key (Bearer).

Answers as the OTLP specification says: 200 with an ExportTraceServiceResponse in the request's
encoding (``partial_success`` counting rejected spans and why), 400 with a google.rpc.Status for a
body that cannot be decoded, 413 over the size limit, 415 for another content type.
"""

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema

from core.api.base import TenantAPIView
from tenants.models import KeyScope

from . import decode
from .services import traces_ingest

INVALID_ARGUMENT = 3
RESOURCE_EXHAUSTED = 8


def _content_type(request) -> str:
    return request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()


class TracesView(TenantAPIView):
    # Spans are what an agent reports; the ingest keeps an agent key to its own runs and agents.
    required_scope = KeyScope.AGENT
    parser_classes = []  # the body is read raw: protobuf is not DRF's business

    @extend_schema(
        operation_id="otlp_traces_export",
        request={decode.PROTOBUF: OpenApiTypes.BINARY, decode.JSON: OpenApiTypes.OBJECT},
        responses={
            200: OpenApiResponse(description="ExportTraceServiceResponse (partial_success when spans were rejected)"),
            400: OpenApiResponse(description="google.rpc.Status: the body could not be decoded"),
            413: OpenApiResponse(description="google.rpc.Status: the body is over the limit"),
            415: OpenApiResponse(description="Not application/x-protobuf or application/json"),
        },
        description="OTLP/HTTP trace export (protobuf or JSON, gzip accepted). Spans with attribute "
        "groundrule.run_id join that run; otherwise each trace id becomes one run.",
    )
    def post(self, request):
        content_type = _content_type(request)
        if content_type not in (decode.PROTOBUF, decode.JSON):
            return HttpResponse(
                b"Use application/x-protobuf or application/json.", status=415, content_type="text/plain"
            )
        body = request._request.body
        try:
            encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
            if encoding == "gzip":
                body = decode.gunzip(body, settings.OTLP_MAX_BODY_BYTES)
            elif encoding not in ("", "identity"):
                raise decode.Undecodable(f"Unsupported Content-Encoding {encoding!r}; use gzip.")
            export = decode.parse(body, content_type)
        except decode.TooLarge as exc:
            return self._status(content_type, 413, RESOURCE_EXHAUSTED, str(exc))
        except decode.Undecodable as exc:
            return self._status(content_type, 400, INVALID_ARGUMENT, str(exc))
        result = traces_ingest(tenant=self.tenant, api_key=request.auth, request=export)
        return HttpResponse(
            decode.export_response(content_type, rejected=result.rejected, message=result.message),
            content_type=content_type,
        )

    @staticmethod
    def _status(content_type: str, http_status: int, code: int, message: str) -> HttpResponse:
        return HttpResponse(
            decode.status_body(content_type, code=code, message=message), status=http_status, content_type=content_type
        )
