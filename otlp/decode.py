"""OTLP/HTTP request bodies: protobuf or JSON, optionally gzip, into an ExportTraceServiceRequest.

OTLP/JSON differs from protobuf's canonical JSON in one way that matters here: trace and span ids are
hex strings, not base64 (OTLP specification, "JSON Protobuf Encoding"); they are converted before
parsing. Unknown fields are ignored, as the specification asks of receivers.
"""

import base64
import binascii
import json
import zlib

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


class Undecodable(Exception):
    """The body is not an OTLP trace export in the declared encoding (answered 400)."""


class TooLarge(Exception):
    """The body, once decompressed, is over the limit (answered 413)."""


def gunzip(body: bytes, limit: int) -> bytes:
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decompressor.decompress(body, limit + 1)
    except zlib.error:
        raise Undecodable("Body is not valid gzip.") from None
    if len(out) > limit or decompressor.unconsumed_tail:
        raise TooLarge(f"Decompressed body is over the limit of {limit} bytes.")
    return out


def _hex_ids_to_base64(value):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _ID_KEYS and isinstance(item, str):
                try:
                    item = base64.b64encode(bytes.fromhex(item)).decode()
                except ValueError:
                    raise Undecodable(f"{key} must be a hex string.") from None
            else:
                item = _hex_ids_to_base64(item)
            out[key] = item
        return out
    if isinstance(value, list):
        return [_hex_ids_to_base64(item) for item in value]
    return value


def parse(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError):
            raise Undecodable("Body is not a protobuf ExportTraceServiceRequest.") from None
        return message
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise Undecodable("Body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise Undecodable("Body must be a JSON object.")
    try:
        json_format.ParseDict(_hex_ids_to_base64(data), message, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, RecursionError, ValueError, TypeError) as exc:
        raise Undecodable(f"Body is not an OTLP/JSON ExportTraceServiceRequest: {str(exc)[:200]}") from None
    return message


def export_response(content_type: str, *, rejected: int, message: str) -> bytes:
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if content_type == PROTOBUF:
        return response.SerializeToString()
    return json_format.MessageToJson(response, indent=None).encode()


def status_body(content_type: str, *, code: int, message: str) -> bytes:
    """A google.rpc.Status, what OTLP/HTTP answers with a 4xx."""
    status = status_pb2.Status(code=code, message=message)
    if content_type == PROTOBUF:
        return status.SerializeToString()
    return json_format.MessageToJson(status, indent=None).encode()
