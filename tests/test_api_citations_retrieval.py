"""Citations as objects (docs/citations.md) and retrieval provenance (docs/retrieval-provenance.md)
over the API: what is
accepted and refused, what is stored, and citations resolving against what the run retrieved."""

import copy
import json

import pytest
from api_support import (
    complete,
    create_policy,
    ground,
    post_json,
    post_raw,
    row_counts,
    start_run,
)
from django_scopes import scopes_disabled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.models import Policy

pytestmark = pytest.mark.django_db

FED_TEXT = "In March 2023 the Federal Reserve raised its benchmark rate by 25 basis points."
IMF_TEXT = "The IMF expects global growth of 3.0% in 2023."

PROVENANCE = {
    "intent": {
        "mode": "resolved",
        "text_queries": ["fed rate decision 2023", "imf growth forecast"],
        "filters": {},
        "scope": "focused",
    },
    "results_by_source": {
        "knowledge_base": [
            {
                "source_id": "fed-2023",
                "source_type": "vector_kb",
                "relevance": 0.92,
                "text": FED_TEXT,
                "text_preview": "In March 2023 the Federal...",
                "metadata": {"heading_path": "Rates > 2023"},
            },
            {"source_id": "imf-9", "source_type": "vector_kb", "relevance": 0.35, "text": IMF_TEXT, "metadata": {}},
        ],
    },
    "total_results": 8,
    "deduplicated_to": 2,
    "retrieval_time_ms": 45.2,
    "intent_resolution_time_ms": 120.5,
}
CONTRACT = {
    "citation_quotes": "required",
    "citations_must_resolve": True,
    "max_citations": 3,
    "min_citations": 1,
    "min_grounding_score": None,
    "action_on_violation": "block",
}


def span(client, run_id, **body):
    return post_json(client, f"/api/v1/runs/{run_id}/spans/", {"kind": "retrieval", "name": "kb_search", **body})


def retrieve(client, run_id, provenance=PROVENANCE):
    response = span(client, run_id, attributes={"provenance": provenance})
    assert response.status_code == 201, response.content
    return response.json()


# --- citations as objects -----------------------------------------------------------------------


def test_citations_may_mix_strings_and_objects_and_are_stored_as_sent(api):
    create_policy(api, rules={"min_citations": 1, "min_grounding_score": None})
    run_id = start_run(api)
    citations = [
        "Federal Reserve Report",
        {"source_id": "fed-2023"},
        {"source_id": "fed-2023", "quote": "raised its benchmark rate"},
    ]

    response = ground(api, run_id, citations=citations, sources=[{"id": "fed-2023", "text": FED_TEXT}])

    assert response.status_code == 200, response.content
    detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert detail["citations"] == citations
    assert detail["reports"][0]["citations"] == citations
    assert complete(api, run_id).json()["decision"]["reason"] == "Grounding audit passed (3 citations)"


BAD_CITATIONS = [
    ("object without source_id", [{"quote": "x"}], {"0": {"source_id"}}),
    ("source_id a number", [{"source_id": 7}], {"0": {"source_id"}}),
    ("source_id blank", [{"source_id": ""}], {"0": {"source_id"}}),
    ("quote a list", [{"source_id": "a", "quote": ["x"]}], {"0": {"quote"}}),
    ("quote blank", [{"source_id": "a", "quote": "  "}], {"0": {"quote"}}),
    ("unknown key", [{"source_id": "a", "page": 3}], {"0": {"page"}}),
    ("a number after a good one", ["ok", 3], {"1": None}),
    ("null", [None], {"0": None}),
]


@pytest.mark.parametrize("case, citations, where", BAD_CITATIONS, ids=[c[0] for c in BAD_CITATIONS])
def test_a_bad_citation_is_a_400_naming_it(api, case, citations, where):
    run_id = start_run(api)
    before = row_counts()

    response = ground(api, run_id, citations=citations)

    assert response.status_code == 400, response.content
    errors = response.json()["citations"]
    for index, fields in where.items():
        assert index in errors, errors
        if fields:
            assert set(errors[index]) == fields, errors
    assert row_counts() == before


# --- the contract through a run ---------------------------------------------------------------------


def test_honest_citations_against_retrieved_results_pass(api):
    create_policy(api, rules=CONTRACT)
    run_id = start_run(api)
    retrieve(api, run_id)

    mid = ground(api, run_id, citations=[{"source_id": "fed-2023", "quote": "Federal Reserve raised its benchmark"}])
    after = complete(api, run_id)

    assert mid.json()["decision"]["action"] == "allow"
    assert after.json()["decision"]["reason"] == "Grounding audit passed (1 citations)"


def test_a_fabricated_quote_blocks_at_mid_execution_with_the_source_text(api):
    create_policy(api, rules=CONTRACT)
    run_id = start_run(api)
    retrieve(api, run_id)

    decision = ground(
        api,
        run_id,
        citations=[{"source_id": "fed-2023", "quote": "raised rates by 50 basis points"}],
        grounding_scores=[0.9],
    ).json()["decision"]

    assert (decision["action"], decision["reason"]) == ("block", 'Citation "fed-2023" quote not found in source')
    failure = decision["evaluations"][0]["metadata"]["citation_failures"][0]
    assert failure == {
        "citation": {"source_id": "fed-2023", "quote": "raised rates by 50 basis points"},
        "problem": "quote_not_found",
        "source_id": "fed-2023",
        "source_text": FED_TEXT,
    }


def test_a_citation_to_something_never_retrieved_is_flagged_at_completion(api):
    create_policy(api, rules={**CONTRACT, "action_on_violation": "warn"})
    run_id = start_run(api)
    retrieve(api, run_id)
    ground(api, run_id, citations=[{"source_id": "fed-2023", "quote": "benchmark rate"}])
    ground(api, run_id, citations=["Some Blog"])

    decision = complete(api, run_id).json()["decision"]

    assert decision["action"] == "warn"
    assert decision["reason"] == (
        'Citation "Some Blog" has no quote (quotes required); '
        'Citation "Some Blog" does not resolve to a retrieved source'
    )
    stored = api.get("/api/v1/evaluations/?phase=after_workflow").json()["results"][0]
    assert [f["problem"] for f in stored["metadata"]["citation_failures"]] == ["missing_quote", "unresolved"]


def test_mid_execution_judges_only_that_report_and_completion_all_of_them(api):
    create_policy(api, rules={**CONTRACT, "citation_quotes": "off", "max_citations": 2, "action_on_violation": "warn"})
    run_id = start_run(api)
    retrieve(api, run_id)

    first = ground(api, run_id, citations=["fed-2023", "imf-9"]).json()["decision"]
    second = ground(api, run_id, citations=["imf-9"]).json()["decision"]
    final = complete(api, run_id).json()["decision"]

    assert (first["action"], second["action"]) == ("allow", "allow")
    assert final["reason"] == "Citations (3) exceed maximum (2)"


def test_sources_reported_with_text_resolve_without_any_retrieval(api):
    create_policy(api, rules=CONTRACT)
    run_id = start_run(api)

    decision = ground(
        api,
        run_id,
        citations=[{"source_id": "imf-9", "quote": "growth of 3.0%"}],
        sources=[{"id": "imf-9", "text": IMF_TEXT}],
    ).json()["decision"]

    assert decision["action"] == "allow"


def test_a_retrieval_recorded_after_the_report_still_counts_at_completion(api):
    create_policy(api, rules={**CONTRACT, "action_on_violation": "warn"})
    run_id = start_run(api)
    early = ground(api, run_id, citations=[{"source_id": "imf-9", "quote": "global growth"}]).json()["decision"]
    retrieve(api, run_id)

    assert early["reason"] == 'Citation "imf-9" does not resolve to a retrieved source'
    assert complete(api, run_id).json()["decision"]["action"] == "allow"


def test_retrieval_spans_of_another_run_do_not_resolve_citations(api):
    create_policy(api, rules=CONTRACT)
    other = start_run(api)
    retrieve(api, other)
    run_id = start_run(api)

    decision = ground(api, run_id, citations=[{"source_id": "fed-2023", "quote": "benchmark"}]).json()["decision"]

    assert decision["reason"] == 'Citation "fed-2023" does not resolve to a retrieved source'


# --- sources referencing retrieved results by id ----------------------------------------------------


def test_a_source_named_by_id_takes_its_text_from_the_retrieval(api):
    create_policy(api, rules={"min_grounding_score": None})
    run_id = start_run(api)
    retrieval = retrieve(api, run_id)

    ground(api, run_id, sources=[{"id": "fed-2023"}, {"id": "unknown-7"}, {"id": "own", "text": "Own text."}])

    sources = api.get(f"/api/v1/runs/{run_id}/reports/").json()["results"][0]["sources"]
    assert sources == [
        {"id": "fed-2023", "text": FED_TEXT, "score": None, "span_id": retrieval["id"]},
        {"id": "unknown-7", "text": "", "score": None},
        {"id": "own", "text": "Own text.", "score": None},
    ]


def test_the_latest_retrieval_of_an_id_wins(api):
    run_id = start_run(api)
    retrieve(api, run_id)
    newer = copy.deepcopy(PROVENANCE)
    newer["results_by_source"]["knowledge_base"][0]["text"] = "Revised: the Fed raised rates."
    latest = retrieve(api, run_id, newer)

    ground(api, run_id, sources=[{"id": "fed-2023"}])

    source = api.get(f"/api/v1/runs/{run_id}/reports/").json()["results"][0]["sources"][0]
    assert (source["text"], source["span_id"]) == ("Revised: the Fed raised rates.", latest["id"])


def test_the_verifier_reads_the_resolved_text(api):
    create_policy(api, rules={"nli_check": True, "nli_phase": "mid_execution", "min_grounding_score": None})
    run_id = start_run(api)
    retrieve(api, run_id)

    decision = ground(
        api,
        run_id,
        output="The Federal Reserve raised its benchmark rate by 50 basis points in March 2023.",
        sources=[{"id": "fed-2023"}],
    ).json()["decision"]

    verifier = [e for e in decision["evaluations"] if e.get("source") == "verifier"][0]
    assert "contradicts" in verifier["reason"], verifier


# --- provenance on retrieval spans --------------------------------------------------------------------


def test_a_retrieval_span_stores_its_provenance_as_sent(api):
    run_id = start_run(api)

    stored = retrieve(api, run_id)

    assert stored["kind"] == "retrieval"
    assert stored["attributes"] == {"provenance": PROVENANCE}
    assert api.get(f"/api/v1/runs/{run_id}/spans/").json()["results"][0]["attributes"]["provenance"] == PROVENANCE


def test_the_minimal_record_and_the_flat_results_list_are_accepted(api):
    run_id = start_run(api)
    minimal = {"intent": {"text_queries": ["q"]}, "results_by_source": {}}
    flat = {
        **minimal,
        "results": [{"source_id": "c1", "relevance": 1, "text": "x", "source_name": "kb"}],
        "total_results": 0,
        "deduplicated_to": 0,
        "retrieval_time_ms": 0,
        "intent_resolution_time_ms": None,
    }

    assert span(api, run_id, attributes={"provenance": minimal}).status_code == 201
    assert span(api, run_id, attributes={"provenance": flat}).status_code == 201


def test_other_attributes_sit_beside_the_provenance(api):
    run_id = start_run(api)
    response = span(api, run_id, attributes={"top_k": 5, "provenance": PROVENANCE})
    assert response.status_code == 201


def with_change(path, value):
    record = copy.deepcopy(PROVENANCE)
    node = record
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return record


RESULT = ("results_by_source", "knowledge_base", 0)
BAD_PROVENANCE = [
    ("not an object", ["x"], ("non_field_errors",)),
    ("no intent", with_change(("intent",), KeyError), ("intent",)),
    ("no queries", with_change(("intent", "text_queries"), KeyError), ("intent", "text_queries")),
    ("queries a string", with_change(("intent", "text_queries"), "fed"), ("intent", "text_queries")),
    ("a query a number", with_change(("intent", "text_queries"), ["a", 3]), ("intent", "text_queries")),
    ("filters a list", with_change(("intent", "filters"), []), ("intent", "filters")),
    ("scope a number", with_change(("intent", "scope"), 1), ("intent", "scope")),
    ("unknown intent key", with_change(("intent", "query"), "x"), ("intent", "query")),
    ("results a list", with_change(("results_by_source",), [{"source_id": "a"}]), ("results_by_source",)),
    ("no results", with_change(("results_by_source",), KeyError), ("results_by_source",)),
    (
        "a source's results an object",
        with_change(("results_by_source", "knowledge_base"), {}),
        ("results_by_source", "knowledge_base"),
    ),
    (
        "relevance above 1",
        with_change((*RESULT, "relevance"), 1.2),
        ("results_by_source", "knowledge_base", "0", "relevance"),
    ),
    (
        "relevance a string",
        with_change((*RESULT, "relevance"), "0.9"),
        ("results_by_source", "knowledge_base", "0", "relevance"),
    ),
    (
        "no relevance",
        with_change((*RESULT, "relevance"), KeyError),
        ("results_by_source", "knowledge_base", "0", "relevance"),
    ),
    (
        "no source_id",
        with_change((*RESULT, "source_id"), KeyError),
        ("results_by_source", "knowledge_base", "0", "source_id"),
    ),
    ("text a number", with_change((*RESULT, "text"), 5), ("results_by_source", "knowledge_base", "0", "text")),
    (
        "metadata a string",
        with_change((*RESULT, "metadata"), "h"),
        ("results_by_source", "knowledge_base", "0", "metadata"),
    ),
    ("unknown result key", with_change((*RESULT, "score"), 0.9), ("results_by_source", "knowledge_base", "0", "score")),
    ("total a float", with_change(("total_results",), 8.0), ("total_results",)),
    ("total a bool", with_change(("total_results",), True), ("total_results",)),
    ("total negative", with_change(("total_results",), -1), ("total_results",)),
    ("dedup above total", with_change(("deduplicated_to",), 9), ("deduplicated_to",)),
    ("time a string", with_change(("retrieval_time_ms",), "45ms"), ("retrieval_time_ms",)),
    ("time negative", with_change(("intent_resolution_time_ms",), -1), ("intent_resolution_time_ms",)),
    ("unknown key", with_change(("results_count",), 2), ("results_count",)),
]


@pytest.mark.parametrize("case, provenance, path", BAD_PROVENANCE, ids=[b[0] for b in BAD_PROVENANCE])
def test_a_bad_provenance_record_is_a_400_naming_the_field(api, case, provenance, path):
    run_id = start_run(api)
    before = row_counts()

    response = span(api, run_id, attributes={"provenance": provenance})

    assert response.status_code == 400, response.content
    node = response.json()["attributes"]["provenance"]
    for key in path:
        assert key in node, (key, response.json())
        node = node[key]
    assert row_counts() == before


def test_provenance_on_a_span_that_is_not_a_retrieval_is_refused(api):
    run_id = start_run(api)

    response = post_json(
        api,
        f"/api/v1/runs/{run_id}/spans/",
        {"kind": "tool", "name": "search", "attributes": {"provenance": PROVENANCE}},
    )

    assert response.status_code == 400
    assert response.json() == {"attributes": {"provenance": ["Only a retrieval span carries a provenance record."]}}


def test_a_retrieval_span_without_provenance_is_still_fine(api):
    run_id = start_run(api)
    assert span(api, run_id, output={"found": 3}, attributes={"top_k": 5}).status_code == 201


# --- cost -------------------------------------------------------------------------------------------


def test_reports_without_citation_rules_or_references_read_no_spans(api, acme, django_assert_max_num_queries):
    # As in test_query_counts: a report drawn for the score audit queues it (one more INSERT), at random.
    acme.score_audit_rate = 0
    acme.save(update_fields=["score_audit_rate"])
    create_policy(api)
    run_id = start_run(api)
    retrieve(api, run_id)
    ground(api, run_id, grounding_scores=[0.9])

    # the same budget as test_query_counts: retrieval spans are only read when something needs them
    with django_assert_max_num_queries(9):
        ground(api, run_id, grounding_scores=[0.9], citations=["a", "b"], sources=[{"id": "a", "text": "t"}])


# --- fuzzing: no record, however odd, is a server error --------------------------------------------


def send(client, path, body):
    # ensure_ascii turns lone surrogates into \ud800 escapes, which the server's parser accepts.
    return post_raw(client, path, json.dumps(body).encode())


any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=10,
)
results = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "source_id": any_text | json_values,
            "relevance": st.floats(-1, 2) | json_values,
            "text": any_text | json_values,
            "metadata": json_values,
            "source_type": any_text,
        },
    ),
    max_size=3,
)
provenances = json_values | st.fixed_dictionaries(
    {},
    optional={
        "intent": st.fixed_dictionaries(
            {},
            optional={
                "text_queries": st.lists(any_text, max_size=3) | json_values,
                "scope": json_values,
                "filters": json_values,
            },
        )
        | json_values,
        "results_by_source": st.dictionaries(any_text, results | json_values, max_size=2) | json_values,
        "results": results | json_values,
        "total_results": json_values,
        "deduplicated_to": json_values,
        "retrieval_time_ms": json_values,
        "intent_resolution_time_ms": json_values,
    },
)
fuzz = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@fuzz
@given(provenance=provenances, kind=st.sampled_from(["retrieval", "tool"]))
def test_no_provenance_record_causes_a_server_error(api, provenance, kind):
    run_id = start_run(api)

    response = send(
        api, f"/api/v1/runs/{run_id}/spans/", {"kind": kind, "name": "search", "attributes": {"provenance": provenance}}
    )

    assert response.status_code in (201, 400), (provenance, response.content)


@fuzz
@given(
    citations=st.lists(
        any_text
        | json_values
        | st.fixed_dictionaries({"source_id": any_text | json_values}, optional={"quote": any_text | json_values}),
        max_size=4,
    ),
    sources=st.lists(st.fixed_dictionaries({"id": any_text}, optional={"text": any_text}), max_size=3),
)
def test_no_citation_causes_a_server_error(api, acme, citations, sources):
    with scopes_disabled():
        if not Policy.objects.filter(tenant=acme).exists():
            create_policy(api, rules={**CONTRACT, "max_citations": 2}, agents=[])
    run_id = start_run(api)

    response = send(api, f"/api/v1/runs/{run_id}/grounding/", {"citations": citations, "sources": sources})
    assert response.status_code in (200, 400), (citations, response.content)
    if response.status_code == 200:
        assert complete(api, run_id).status_code == 200


@fuzz
@given(
    body=json_values
    | st.fixed_dictionaries(
        {},
        optional={
            "agent_name": any_text | json_values,
            "retrieved_text": any_text | json_values,
            "prepared_documents": st.lists(json_values, max_size=3) | json_values,
        },
    )
)
def test_no_decide_body_causes_a_server_error(api, body):
    response = send(api, "/api/v1/grounding/decide/", body)
    assert response.status_code in (200, 400), (body, response.content)
