"""Writes for OTLP ingest: each accepted span joins a run, the run a trace became or the one it names."""

import secrets
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import as_serializer_error

from core.patterns import name_matches
from core.text import text_problem_code
from governance import services as runs
from governance.api.serializers import SpanIn
from governance.models import Run, Span
from tenants.models import ApiKey, KeyScope, Tenant

from . import mapping
from .models import TraceRun

MAX_REPORTED_REASONS = 5


@dataclass
class IngestResult:
    accepted: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    @property
    def message(self) -> str:
        if not self.rejected:
            return ""
        parts = [f"{count} {reason}" for reason, count in list(self.reasons.items())[:MAX_REPORTED_REASONS]]
        return f"{self.rejected} spans rejected: " + "; ".join(parts)


def _explicit_run(tenant: Tenant, value, cache: dict) -> Run | None:
    try:
        pk = int(value)
    except (TypeError, ValueError):
        return None
    if pk not in cache:
        cache[pk] = Run.objects.filter(tenant=tenant, pk=pk).first() if 0 < pk < 2**63 else None
    return cache[pk]


def _trace_run(*, tenant: Tenant, api_key: ApiKey | None, trace_id: str, agent_name: str, cache: dict) -> Run:
    if trace_id in cache:
        return cache[trace_id]
    link = TraceRun.objects.filter(tenant=tenant, trace_id=trace_id).select_related("run").first()
    if link is None:
        try:
            with transaction.atomic():
                run, _ = runs.run_start(
                    tenant=tenant,
                    api_key=api_key,
                    agent_name=agent_name,
                    metadata={"source": "otlp", "otel_trace_id": trace_id},
                )
                link = TraceRun.objects.create(tenant=tenant, trace_id=trace_id, run=run)
        except IntegrityError:  # another export of the same trace made the run first: join it
            link = TraceRun.objects.select_related("run").get(tenant=tenant, trace_id=trace_id)
    cache[trace_id] = link.run
    return link.run


def _agent_key(api_key: ApiKey | None) -> ApiKey | None:
    """The key when it is agent-scoped: it may join only the runs it started, and name only the agents
    it is pinned to, as on the runs API (tenants.auth.HasScope)."""
    return api_key if api_key is not None and api_key.scope == KeyScope.AGENT else None


def _validated(mapped: mapping.MappedSpan) -> dict | str:
    data = {
        "kind": mapped.kind,
        "name": mapped.name,
        "input": mapped.input,
        "output": mapped.output,
        "started_at": mapped.started_at,
        "ended_at": mapped.ended_at,
        "attributes": mapped.attributes,
    }
    if mapped.span_id:
        data["span_id"] = mapped.span_id
    if mapped.parent_span_id:
        data["parent_span_id"] = mapped.parent_span_id
    try:
        return SpanIn().run_validation(data)
    except ValidationError as exc:
        errors = as_serializer_error(exc)
        field_name = next(iter(errors), "span")
        return f"invalid {field_name}"


def traces_ingest(*, tenant: Tenant, api_key: ApiKey | None, request) -> IngestResult:
    """Stores every span of an ExportTraceServiceRequest that maps onto a Groundrule span."""
    result = IngestResult()
    runs_by_id: dict = {}
    runs_by_trace: dict = {}
    rows: list[Span] = []
    agent_key = _agent_key(api_key)
    for resource_spans in request.resource_spans:
        resource = mapping.attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                mapped = mapping.map_span(span, resource)
                if isinstance(mapped, str):
                    result.reject(mapped)
                    continue
                data = _validated(mapped)
                if isinstance(data, str):
                    result.reject(data)
                    continue
                otel_attrs = mapped.attributes["otel"]["attributes"]
                explicit = otel_attrs.get(mapping.RUN_ID_ATTRIBUTE, resource.get(mapping.RUN_ID_ATTRIBUTE))
                if explicit is not None:
                    run = _explicit_run(tenant, explicit, runs_by_id)
                    # Another key's run is as unknown to an agent key as on the API (a 404 there).
                    if run is None or (agent_key is not None and run.api_key_id != agent_key.pk):
                        result.reject("with an unknown groundrule.run_id")
                        continue
                elif len(span.trace_id) != 16 or not any(span.trace_id):
                    result.reject("without a valid trace id")
                    continue
                else:
                    name = mapping.agent_name(resource, otel_attrs)
                    # The resource's service.name is not among the span's validated attributes: a NUL in
                    # it reached PostgreSQL (a 500) when the trace's run was made.
                    if text_problem_code(name):
                        result.reject("with an agent name that is not valid text")
                        continue
                    if agent_key is not None and agent_key.agents and not name_matches(agent_key.agents, name):
                        result.reject("for an agent this API key may not act for")
                        continue
                    run = _trace_run(
                        tenant=tenant,
                        api_key=api_key,
                        trace_id=span.trace_id.hex(),
                        agent_name=name,
                        cache=runs_by_trace,
                    )
                    if agent_key is not None and run.api_key_id != agent_key.pk:
                        result.reject("of a trace another API key started")
                        continue
                data.setdefault("span_id", secrets.token_hex(8))
                rows.append(Span(tenant=tenant, run=run, **data))
    if rows:
        Span.objects.bulk_create(rows)
    result.accepted = len(rows)
    return result
