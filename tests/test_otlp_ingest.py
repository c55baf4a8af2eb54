"""POST /v1/traces: the real OpenTelemetry SDK and OTLP/HTTP exporter against a live server, and the
OTLP answers (partial success, 400, 413, 415) for protobuf and JSON bodies."""

import gzip
import json

import pytest
from django.test import override_settings
from django_scopes import scopes_disabled
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from governance.models import Run, Span
from otlp.models import TraceRun
from tenants import services as tenant_services
from tenants.audit import Actor

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"


def exporter_for(live_server, raw_key, compression=Compression.Gzip):
    return OTLPSpanExporter(
        endpoint=f"{live_server.url}/v1/traces",
        headers={"Authorization": f"Bearer {raw_key}"},
        compression=compression,
        timeout=10,
    )


class RecordingExporter:
    """The real exporter, keeping what each export returned."""

    def __init__(self, inner):
        self.inner, self.results = inner, []

    def export(self, spans):
        self.results.append(self.inner.export(spans))
        return self.results[-1]

    def shutdown(self):
        self.inner.shutdown()

    def force_flush(self, timeout_millis=30000):
        return True


def tracer_for(exporter, service="research-agent"):
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, provider.get_tracer("tests")


def spans_of(run) -> list[Span]:
    with scopes_disabled():
        return list(Span.objects.filter(run=run).order_by("id"))


@pytest.mark.parametrize("compression", [Compression.Gzip, Compression.NoCompression])
def test_the_real_exporter_maps_llm_tool_and_retriever_spans_onto_one_run(
    transactional_db, live_server, acme, acme_key, compression
):
    exporter = RecordingExporter(exporter_for(live_server, acme_key[1], compression))
    provider, tracer = tracer_for(exporter)
    with tracer.start_as_current_span("agent") as root:
        trace_id = format(root.get_span_context().trace_id, "032x")
        with tracer.start_as_current_span("ChatOpenAI") as llm:
            llm.set_attribute("gen_ai.operation.name", "chat")
            llm.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            llm.set_attribute("gen_ai.usage.input_tokens", 512)
            llm.set_attribute("gen_ai.usage.output_tokens", 40)
        with tracer.start_as_current_span("search") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "web_search")
            tool.set_attribute("input.value", '{"q": "fed rates"}')
        with tracer.start_as_current_span("vector-store") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("input.value", "What did the Fed do in July 2023?")
            retriever.set_attribute("retrieval.documents.0.document.id", "fed-2023")
            retriever.set_attribute("retrieval.documents.0.document.content", "The Fed raised rates by 0.25%.")
            retriever.set_attribute("retrieval.documents.0.document.score", 0.92)
            retriever.set_attribute("retrieval.documents.1.document.id", "ecb-2023")
            retriever.set_attribute("retrieval.documents.1.document.content", "The ECB raised rates too.")
            retriever.set_attribute("retrieval.documents.1.document.score", 7.5)
    provider.shutdown()
    assert exporter.results and all(r == SpanExportResult.SUCCESS for r in exporter.results)

    with scopes_disabled():
        link = TraceRun.objects.get(tenant=acme, trace_id=trace_id)
        run = Run.objects.get(pk=link.run_id)
    assert run.agent_name == "research-agent" and run.metadata["otel_trace_id"] == trace_id
    by_kind = {s.kind: s for s in spans_of(run)}
    assert set(by_kind) == {"llm", "tool", "retrieval"}  # the root "agent" span has no Groundrule kind

    llm = by_kind["llm"]
    assert llm.attributes["model"] == "gpt-4o-mini" and llm.attributes["tokens"] == {"input": 512, "output": 40}
    assert llm.duration_ms is not None and llm.attributes["latency_ms"] >= 0
    assert by_kind["tool"].name == "web_search" and by_kind["tool"].input == '{"q": "fed rates"}'

    provenance = by_kind["retrieval"].attributes["provenance"]
    assert provenance["intent"]["text_queries"] == ["What did the Fed do in July 2023?"]
    (results,) = provenance["results_by_source"].values()
    assert [r["source_id"] for r in results] == ["fed-2023", "ecb-2023"]
    assert results[0]["relevance"] == 0.92 and results[0]["text"] == "The Fed raised rates by 0.25%."
    assert results[1]["relevance"] == 1.0 and results[1]["metadata"]["score"] == 7.5


def test_a_second_export_of_the_same_trace_joins_the_same_run(transactional_db, live_server, acme, acme_key):
    exporter = RecordingExporter(exporter_for(live_server, acme_key[1]))
    provider, tracer = tracer_for(exporter)
    with tracer.start_as_current_span("root"):
        for _ in range(2):  # SimpleSpanProcessor: one export per span
            with tracer.start_as_current_span("llm") as span:
                span.set_attribute("gen_ai.operation.name", "chat")
    provider.shutdown()
    with scopes_disabled():
        assert TraceRun.objects.count() == 1
        assert Run.objects.count() == 1 and Span.objects.count() == 2


def test_groundrule_run_id_joins_that_run_and_another_tenants_run_is_rejected(
    transactional_db, live_server, acme, acme_key, globex
):
    api = acme_key[0]
    run_id = api.post("/api/v1/runs/", {"agent_name": "sdk-agent"}, format="json").json()["id"]
    _, globex_raw = tenant_services.api_key_create(tenant=globex, name="t", actor=Actor.system("tests"))

    # The outsider's span is rejected: the run still has acme's one span.
    for raw, expect in ((acme_key[1], 1), (globex_raw, 1)):
        exporter = RecordingExporter(exporter_for(live_server, raw))
        provider, tracer = tracer_for(exporter)
        with tracer.start_as_current_span("llm") as span:
            span.set_attribute("groundrule.run_id", run_id)
            span.set_attribute("gen_ai.operation.name", "chat")
        provider.shutdown()
        with scopes_disabled():
            assert Span.objects.filter(run_id=run_id).count() == expect
    with scopes_disabled():
        assert not Run.objects.filter(tenant=globex).exists()  # nothing was made for the outsider


def test_a_bad_key_is_refused_by_the_exporter(transactional_db, live_server, acme):
    exporter = RecordingExporter(exporter_for(live_server, "gr_not-a-key"))
    provider, tracer = tracer_for(exporter)
    with tracer.start_as_current_span("llm") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
    provider.shutdown()
    assert exporter.results == [SpanExportResult.FAILURE]
    with scopes_disabled():
        assert not Span.objects.exists()


# --- the wire, with the test client -------------------------------------------------------------


def otlp_json(spans, service="json-agent"):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}],
            }
        ]
    }


def json_span(name="llm", attrs=None, span_id=SPAN_ID, trace_id=TRACE_ID):
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000250000000",
        "attributes": [{"key": k, "value": v} for k, v in (attrs or {}).items()],
    }


def post(api, body, content_type="application/json", **extra):
    return api.generic("POST", "/v1/traces", body, content_type=content_type, **extra)


@pytest.mark.django_db
def test_json_with_hex_ids_and_partial_success(api, acme):
    body = otlp_json(
        [
            json_span(
                "chat",
                {"gen_ai.operation.name": {"stringValue": "chat"}, "gen_ai.usage.input_tokens": {"intValue": "12"}},
            ),
            json_span("http GET", {"http.method": {"stringValue": "GET"}}, span_id="eee19b7ec3c1b175"),
            json_span(
                "tool",
                {"openinference.span.kind": {"stringValue": "TOOL"}, "groundrule.run_id": {"intValue": "999999"}},
                span_id="eee19b7ec3c1b176",
            ),
        ]
    )
    response = post(api, json.dumps(body))
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    answer = response.json()
    assert answer["partialSuccess"]["rejectedSpans"] == "2"
    message = answer["partialSuccess"]["errorMessage"]
    assert "no llm, tool or retrieval kind" in message and "unknown groundrule.run_id" in message
    with scopes_disabled():
        (span,) = Span.objects.filter(tenant=acme)
        assert span.attributes["otel"]["trace_id"] == TRACE_ID and span.attributes["otel"]["span_id"] == SPAN_ID
        assert span.attributes["tokens"] == {"input": 12, "output": None}
        assert span.duration_ms == 250 and span.run.agent_name == "json-agent"


@pytest.mark.django_db
def test_all_accepted_is_an_empty_response(api):
    response = post(api, json.dumps(otlp_json([json_span(attrs={"gen_ai.operation.name": {"stringValue": "chat"}})])))
    assert response.status_code == 200 and response.json() == {}


@pytest.mark.django_db
def test_protobuf_gzip_with_the_test_client_answers_protobuf(api):
    request = ExportTraceServiceRequest()
    json_format.ParseDict(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "traceId": "W47/95gDgQPSabYzgT/GDA==",
                                    "spanId": "7uGbfsPBsXQ=",
                                    "name": "x",
                                    "attributes": [
                                        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}}
                                    ],
                                }
                            ]
                        }
                    ]
                }
            ]
        },
        request,
    )
    response = post(
        api, gzip.compress(request.SerializeToString()), "application/x-protobuf", HTTP_CONTENT_ENCODING="gzip"
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/x-protobuf"
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body,content_type,encoding",
    [
        (b"\xff\xfe not protobuf", "application/x-protobuf", ""),
        (b"{not json", "application/json", ""),
        (b"[1, 2]", "application/json", ""),
        (json.dumps(otlp_json([json_span(trace_id="zz")])).encode(), "application/json", ""),
        (json.dumps({"resourceSpans": "nope"}).encode(), "application/json", ""),
        (b"not gzip at all", "application/json", "gzip"),
        (b"{}", "application/json", "br"),
    ],
)
def test_undecodable_bodies_are_400_with_a_status(api, body, content_type, encoding):
    extra = {"HTTP_CONTENT_ENCODING": encoding} if encoding else {}
    response = post(api, body, content_type, **extra)
    assert response.status_code == 400, response.content
    if content_type == "application/json":
        assert response.json()["code"] == 3 and response.json()["message"]
    else:
        assert status_pb2.Status.FromString(response.content).code == 3


@pytest.mark.django_db
def test_over_the_limit_is_413(api):
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        assert post(api, b"{" + b" " * 2000 + b"}").status_code == 413
    bomb = gzip.compress(b" " * 100_000 + b"{}")
    with override_settings(OTLP_MAX_BODY_BYTES=10_000):
        response = post(api, bomb, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413 and response.json()["code"] == 8


@pytest.mark.django_db
def test_other_content_types_are_415_and_no_key_is_401(api, client):
    assert post(api, b"x", "text/plain").status_code == 415
    assert client.post("/v1/traces", b"{}", content_type="application/json").status_code == 401


@pytest.mark.django_db
def test_the_endpoint_is_in_the_openapi_schema(api):
    assert "/v1/traces" in api.get("/api/v1/schema/?format=json").content.decode()


# --- API key scopes: spans are an agent's to report, within its own runs and agents ------------------


def _key_client(tenant, scope, **kwargs):
    from rest_framework.test import APIClient

    key, raw = tenant_services.api_key_create(
        tenant=tenant, name=f"{scope} otlp", actor=Actor.system("tests"), scope=scope, **kwargs
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client, key


CHAT = {"gen_ai.operation.name": {"stringValue": "chat"}}


@pytest.mark.django_db
def test_an_agent_key_may_export_traces_and_a_read_key_may_not(acme):
    agent, key = _key_client(acme, "agent")
    response = post(agent, json.dumps(otlp_json([json_span(attrs=CHAT)])))
    assert response.status_code == 200 and response.json() == {}, response.content
    with scopes_disabled():
        (run,) = Run.objects.filter(tenant=acme)
        assert run.api_key_id == key.pk and Span.objects.filter(run=run).count() == 1
    reader, _ = _key_client(acme, "read")
    refused = post(reader, json.dumps(otlp_json([json_span(attrs=CHAT, trace_id="1" * 32)])))
    assert refused.status_code == 403 and "agent scope" in refused.json()["detail"]


@pytest.mark.django_db
def test_an_agent_key_joins_only_its_own_runs_and_traces(acme, api):
    other_run = api.post("/api/v1/runs/", {"agent_name": "json-agent"}, format="json").json()["id"]
    assert post(api, json.dumps(otlp_json([json_span(attrs=CHAT)]))).status_code == 200  # the admin key's trace
    agent, _ = _key_client(acme, "agent")
    own_run = agent.post("/api/v1/runs/", {"agent_name": "json-agent"}, format="json").json()["id"]
    spans = [
        json_span(attrs={**CHAT, "groundrule.run_id": {"intValue": str(other_run)}}, span_id="eee19b7ec3c1b171"),
        json_span(attrs=CHAT, span_id="eee19b7ec3c1b172"),  # TRACE_ID: the admin key's run
        json_span(attrs={**CHAT, "groundrule.run_id": {"intValue": str(own_run)}}, span_id="eee19b7ec3c1b173"),
    ]
    answer = post(agent, json.dumps(otlp_json(spans))).json()
    assert answer["partialSuccess"]["rejectedSpans"] == "2", answer
    message = answer["partialSuccess"]["errorMessage"]
    assert "unknown groundrule.run_id" in message and "another API key started" in message
    with scopes_disabled():
        assert Span.objects.filter(run_id=other_run).count() == 0
        (link,) = TraceRun.objects.filter(tenant=acme)
        assert Span.objects.filter(run=link.run_id).count() == 1  # the admin key's one span
        assert Span.objects.filter(run_id=own_run).count() == 1


@pytest.mark.django_db
def test_a_pinned_agent_key_may_not_make_runs_for_other_agents(acme):
    agent, _ = _key_client(acme, "agent", agents=["support-*"])
    body = otlp_json([json_span(attrs=CHAT)], service="billing-agent")
    answer = post(agent, json.dumps(body)).json()
    assert answer["partialSuccess"]["rejectedSpans"] == "1"
    assert "may not act for" in answer["partialSuccess"]["errorMessage"]
    assert post(agent, json.dumps(otlp_json([json_span(attrs=CHAT)], service="support-bot"))).json() == {}
    with scopes_disabled():
        assert list(Run.objects.filter(tenant=acme).values_list("agent_name", flat=True)) == ["support-bot"]


@pytest.mark.django_db
def test_an_agent_name_that_is_not_valid_text_is_a_rejected_span(api, acme):
    # service.name comes from the resource, not the span's validated attributes: a NUL was a 500.
    body = otlp_json([json_span(attrs=CHAT)], service="svc\u0000")
    response = post(api, json.dumps(body))
    assert response.status_code == 200, response.content
    assert "agent name that is not valid text" in response.json()["partialSuccess"]["errorMessage"]
    with scopes_disabled():
        assert not Run.objects.filter(tenant=acme).exists()
