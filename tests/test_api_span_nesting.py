"""Nested spans over the API and OTLP: span_id and parent_span_id, checked within the run's tenant."""

import re

import pytest
from api_support import post_json, start_run
from django_scopes import scopes_disabled
from test_otlp_ingest import RecordingExporter, exporter_for, tracer_for

from governance.models import Span

pytestmark = pytest.mark.django_db


def post_span(api, run_id, **body):
    return post_json(api, f"/api/v1/runs/{run_id}/spans/", {"kind": "tool", "name": "step", **body})


def span_count() -> int:
    with scopes_disabled():
        return Span.objects.count()


def test_a_child_names_its_parent_and_both_are_listed_with_their_ids(api):
    run_id = start_run(api)
    child = post_span(api, run_id, name="child", span_id="c1", parent_span_id="p1")
    assert child.status_code == 201, child.content
    assert child.json()["span_id"] == "c1" and child.json()["parent_span_id"] == "p1"
    parent = post_span(api, run_id, name="parent", span_id="p1")  # sent after its child, as OTel does
    assert parent.status_code == 201 and parent.json()["parent_span_id"] is None
    listed = api.get(f"/api/v1/runs/{run_id}/spans/").json()["results"]
    assert [(s["name"], s["span_id"], s["parent_span_id"]) for s in listed] == [
        ("child", "c1", "p1"),
        ("parent", "p1", None),
    ]


def test_a_span_sent_without_an_id_gets_one(api):
    response = post_span(api, start_run(api))
    assert response.status_code == 201
    assert re.fullmatch(r"[0-9a-f]{16}", response.json()["span_id"])


def test_a_parent_of_another_run_is_a_400_on_parent_span_id_and_nothing_is_written(api):
    first, second = start_run(api), start_run(api)
    assert post_span(api, first, span_id="root-of-first").status_code == 201
    before = span_count()
    response = post_span(api, second, parent_span_id="root-of-first")
    assert response.status_code == 400
    assert response.json() == {"parent_span_id": ["Names a span of another run: a parent must be in the same run."]}
    assert span_count() == before
    # The same id recorded in this run too is this run's span: accepted.
    assert post_span(api, second, span_id="root-of-first").status_code == 201
    assert post_span(api, second, parent_span_id="root-of-first").status_code == 201


def test_another_tenants_span_id_is_answered_as_an_unknown_one(api, other_api):
    theirs = start_run(other_api)
    assert post_span(other_api, theirs, span_id="globex-secret-span").status_code == 201
    run_id = start_run(api)
    named = post_span(api, run_id, name="a", parent_span_id="globex-secret-span")
    unknown = post_span(api, run_id, name="b", parent_span_id="never-recorded")
    assert named.status_code == unknown.status_code == 201
    assert set(named.json()) == set(unknown.json())
    # Nothing of theirs is reachable from here: their run is a 404 and their span list too.
    assert api.get(f"/api/v1/runs/{theirs}/spans/").status_code == 404
    assert post_span(api, theirs, parent_span_id="globex-secret-span").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"span_id": ""}, "span_id"),
        ({"span_id": "has space"}, "span_id"),
        ({"span_id": "x" * 65}, "span_id"),
        ({"span_id": 7}, "span_id"),
        ({"parent_span_id": "a/b"}, "parent_span_id"),
        ({"parent_span_id": ""}, "parent_span_id"),
        ({"span_id": "same", "parent_span_id": "same"}, "parent_span_id"),
    ],
)
def test_bad_ids_are_a_400_naming_the_field(api, body, field):
    run_id = start_run(api)
    before = span_count()
    response = post_span(api, run_id, **body)
    assert response.status_code == 400, response.content
    assert set(response.json()) == {field} and response.json()[field]
    assert span_count() == before


def test_otlp_export_keeps_each_spans_parent(transactional_db, live_server, acme, acme_key):
    exporter = RecordingExporter(exporter_for(live_server, acme_key[1]))
    provider, tracer = tracer_for(exporter)
    with tracer.start_as_current_span("search") as tool:
        tool.set_attribute("openinference.span.kind", "TOOL")
        tool_id = format(tool.get_span_context().span_id, "016x")
        with tracer.start_as_current_span("ChatOpenAI") as llm:
            llm.set_attribute("gen_ai.operation.name", "chat")
            llm_id = format(llm.get_span_context().span_id, "016x")
    provider.shutdown()
    with scopes_disabled():
        spans = {s.kind: s for s in Span.objects.all()}
    assert spans["tool"].span_id == tool_id and spans["tool"].parent_span_id is None
    assert spans["llm"].span_id == llm_id and spans["llm"].parent_span_id == tool_id
