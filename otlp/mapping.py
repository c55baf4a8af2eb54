"""OpenTelemetry spans as Groundrule spans: kind, model, token counts, latency, retrieval provenance.

Kinds come from OpenInference (``openinference.span.kind``: LLM, TOOL, RETRIEVER), the GenAI
semantic conventions (``gen_ai.operation.name``) and OpenLLMetry (``traceloop.span.kind``,
``llm.request.type``). A retriever's documents (OpenInference ``retrieval.documents.<i>.document.*``)
become the provenance record a retrieval span carries (docs/retrieval-provenance.md), so
citations resolve against them as against any retrieval the SDK reports.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

RUN_ID_ATTRIBUTE = "groundrule.run_id"
AGENT_NAME_ATTRIBUTES = ("gen_ai.agent.name", "service.name")

OPENINFERENCE_KINDS = {"LLM": "llm", "EMBEDDING": "llm", "TOOL": "tool", "RETRIEVER": "retrieval"}
GENAI_OPERATIONS = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "embeddings": "llm",
    "execute_tool": "tool",
    "retrieval": "retrieval",
    "retrieve": "retrieval",
}
TRACELOOP_KINDS = {"tool": "tool"}

MODEL_ATTRIBUTES = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
INPUT_TOKEN_ATTRIBUTES = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_TOKEN_ATTRIBUTES = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")
MAX_NAME = 200
MAX_TEXT = 100_000
MAX_DOCUMENTS = 1000


def any_value(value) -> Any:
    """An OTLP AnyValue as plain JSON-able Python."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value.hex()
    if which == "double_value" and value.double_value != value.double_value:  # NaN cannot be stored as JSON
        return None
    return getattr(value, which)


def attributes(key_values) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in key_values}


def _first(attrs: dict, keys) -> Any:
    return next((attrs[k] for k in keys if attrs.get(k) not in (None, "")), None)


def kind_of(attrs: dict) -> str | None:
    if (kind := OPENINFERENCE_KINDS.get(str(attrs.get("openinference.span.kind", "")).upper())) is not None:
        return kind
    if (kind := GENAI_OPERATIONS.get(str(attrs.get("gen_ai.operation.name", "")).lower())) is not None:
        return kind
    if (kind := TRACELOOP_KINDS.get(str(attrs.get("traceloop.span.kind", "")).lower())) is not None:
        return kind
    if attrs.get("llm.request.type") or attrs.get("gen_ai.system"):
        return "llm"
    return None


def agent_name(resource: dict, attrs: dict) -> str:
    name = attrs.get("gen_ai.agent.name") or resource.get("gen_ai.agent.name") or resource.get("service.name")
    return str(name or "otel-agent")[:MAX_NAME]


def _time(nanos: int) -> datetime | None:
    return datetime.fromtimestamp(nanos / 1e9, tz=UTC) if nanos else None


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _documents(attrs: dict) -> list[dict]:
    """OpenInference flattens a retriever's documents into ``retrieval.documents.<i>.document.<field>``."""
    found: dict[int, dict] = {}
    prefix = "retrieval.documents."
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, field = key[len(prefix) :].partition(".document.")
        if index.isdigit() and field and int(index) < MAX_DOCUMENTS:
            found.setdefault(int(index), {})[field] = value
    return [found[i] for i in sorted(found)]


def _relevance(score) -> tuple[float, Any]:
    """Provenance wants a 0..1 relevance; retrievers report anything (distances, BM25). Out-of-range
    scores are clamped and kept as they came in ``metadata.score``."""
    try:
        value = float(score)
    except (TypeError, ValueError):
        return 0.0, score
    if value != value:
        return 0.0, None
    return min(1.0, max(0.0, value)), value


def provenance(attrs: dict, span_name: str) -> dict | None:
    documents = _documents(attrs)
    if not documents:
        return None
    by_source: dict[str, list] = {}
    for n, doc in enumerate(documents):
        metadata = doc.get("metadata")
        if isinstance(metadata, str):
            metadata = {"raw": metadata}
        metadata = dict(metadata or {})
        relevance, raw = _relevance(doc.get("score"))
        if raw is not None and raw != relevance:
            metadata["score"] = raw
        source = str(metadata.get("source") or span_name or "retriever")[:MAX_NAME]
        result = {
            "source_id": str(doc.get("id") or f"{span_name}-{n}")[:500],
            "relevance": relevance,
            "text": str(doc.get("content") or "")[:MAX_TEXT],
        }
        if metadata:
            result["metadata"] = metadata
        by_source.setdefault(source, []).append(result)
    query = attrs.get("input.value")
    return {"intent": {"text_queries": [str(query)[:2000]] if query else []}, "results_by_source": by_source}


@dataclass
class MappedSpan:
    kind: str
    name: str
    input: Any
    output: Any
    started_at: datetime | None
    ended_at: datetime | None
    attributes: dict
    span_id: str | None = None
    parent_span_id: str | None = None  # kept for the Trace tab's nesting


def map_span(span, resource: dict) -> MappedSpan | str:
    """The Groundrule span for an OTLP span, or why it is rejected."""
    attrs = attributes(span.attributes)
    kind = kind_of(attrs)
    if kind is None:
        return "no llm, tool or retrieval kind"
    mapped: dict[str, Any] = {
        "otel": {
            "trace_id": span.trace_id.hex(),
            "span_id": span.span_id.hex(),
            "parent_span_id": span.parent_span_id.hex() or None,
            "status": span.status.code,
        }
    }
    if model := _first(attrs, MODEL_ATTRIBUTES):
        mapped["model"] = str(model)
    tokens = {
        "input": _int(_first(attrs, INPUT_TOKEN_ATTRIBUTES)),
        "output": _int(_first(attrs, OUTPUT_TOKEN_ATTRIBUTES)),
    }
    if any(v is not None for v in tokens.values()):
        mapped["tokens"] = tokens
    started, ended = _time(span.start_time_unix_nano), _time(span.end_time_unix_nano)
    if started and ended:
        mapped["latency_ms"] = round((span.end_time_unix_nano - span.start_time_unix_nano) / 1e6, 3)
    if kind == "retrieval" and (record := provenance(attrs, span.name)) is not None:
        mapped["provenance"] = record
    # What the instrumentation said, minus what was just mapped (documents can be large).
    mapped["otel"]["attributes"] = {k: v for k, v in attrs.items() if not k.startswith("retrieval.documents.")}
    name = str(attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or span.name or kind)[:MAX_NAME]
    return MappedSpan(
        kind=kind,
        name=name,
        input=attrs.get("input.value"),
        output=attrs.get("output.value"),
        started_at=started,
        ended_at=ended,
        attributes=mapped,
        span_id=span.span_id.hex() or None,
        parent_span_id=span.parent_span_id.hex() or None,
    )
