"""Bad input: a 400 naming the field (413 for an oversized body), nothing written, never a 500."""

import base64
import json

import pytest
from api_support import (
    STRICT,
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


def names(body, *path) -> bool:
    """Whether the error body names the field at `path` (nested objects, one key per level)."""
    node = body
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return bool(node)


def valid_policy(**changes) -> dict:
    return {
        "name": "Strict Research Grounding",
        "category": "grounding",
        "rules": dict(STRICT),
        "scope": {"agents": ["research-agent"]},
        "enabled": True,
        **changes,
    }


def with_rule(rule: str, value) -> dict:
    return valid_policy(rules={**STRICT, rule: value})


# (case, body, the path of the field the error must name)
POLICY_ERRORS = [
    ("unknown rule key", with_rule("min_score", 0.5), ("rules", "min_score")),
    ("typo of a rule key", with_rule("grounding_score", 0.5), ("rules", "grounding_score")),
    ("number as a string", with_rule("min_grounding_score", "0.8"), ("rules", "min_grounding_score")),
    ("bool as a number", with_rule("min_grounding_score", True), ("rules", "min_grounding_score")),
    ("bool as an integer", with_rule("min_citations", True), ("rules", "min_citations")),
    ("fraction as an integer", with_rule("min_citations", 1.5), ("rules", "min_citations")),
    ("integer as a string", with_rule("min_citations", "2"), ("rules", "min_citations")),
    ("number as a boolean", with_rule("require_source_grounding", 1), ("rules", "require_source_grounding")),
    ("string as a boolean", with_rule("require_source_grounding", "true"), ("rules", "require_source_grounding")),
    ("score above 1", with_rule("min_grounding_score", 1.5), ("rules", "min_grounding_score")),
    ("score below 0", with_rule("min_grounding_score", -0.1), ("rules", "min_grounding_score")),
    ("negative count", with_rule("min_citations", -1), ("rules", "min_citations")),
    ("negative claim limit", with_rule("max_unsupported_claims", -1), ("rules", "max_unsupported_claims")),
    ("top_n of zero", with_rule("score_top_n", 0), ("rules", "score_top_n")),
    ("floor above 1", with_rule("score_relevance_floor", 2), ("rules", "score_relevance_floor")),
    ("abstention above 1", with_rule("abstention_threshold", 1.01), ("rules", "abstention_threshold")),
    ("null for a non-nullable rule", with_rule("min_citations", None), ("rules", "min_citations")),
    ("bad action", with_rule("action_on_violation", "deny"), ("rules", "action_on_violation")),
    ("action in capitals", with_rule("action_on_violation", "BLOCK"), ("rules", "action_on_violation")),
    ("bad eval mode", with_rule("score_eval_mode", "median"), ("rules", "score_eval_mode")),
    ("bad judge phase", with_rule("llm_grounding_phase", "sometimes"), ("rules", "llm_grounding_phase")),
    ("judge model of no provider", with_rule("llm_grounding_model", "bert-base"), ("rules", "llm_grounding_model")),
    ("NUL in a string rule", with_rule("abstention_response", "a\x00b"), ("rules", "abstention_response")),
    ("rules not an object", valid_policy(rules=[1, 2]), ("rules",)),
    ("unknown category", valid_policy(category="retrieval"), ("category",)),
    ("category not a string", valid_policy(category=7), ("category",)),
    ("scope agents not a list", valid_policy(scope={"agents": "research-agent"}), ("scope",)),
    ("scope not an object", valid_policy(scope="research-agent"), ("scope",)),
    ("scope with an unknown key", valid_policy(scope={"agent": ["x"]}), ("scope",)),
    ("scope agent not a string", valid_policy(scope={"agents": [7]}), ("scope",)),
    ("scope agent empty", valid_policy(scope={"agents": [""]}), ("scope",)),
    ("scope agent too long", valid_policy(scope={"agents": ["a" * 201]}), ("scope",)),
    ("unknown top-level field", valid_policy(threshold=0.5), ("threshold",)),
    ("missing name", {k: v for k, v in valid_policy().items() if k != "name"}, ("name",)),
    ("blank name", valid_policy(name="   "), ("name",)),
    ("name not a string", valid_policy(name=42), ("name",)),
    ("name too long", valid_policy(name="n" * 201), ("name",)),
    ("NUL in the name", valid_policy(name="Strict\x00"), ("name",)),
    ("NUL in the description", valid_policy(description="a\x00b"), ("description",)),
    ("missing category", {k: v for k, v in valid_policy().items() if k != "category"}, ("category",)),
    ("enabled as a string", valid_policy(enabled="yes"), ("enabled",)),
    ("enabled as a number", valid_policy(enabled=1), ("enabled",)),
    ("description not a string", valid_policy(description=["x"]), ("description",)),
]


@pytest.mark.parametrize("case, body, path", POLICY_ERRORS, ids=[c[0] for c in POLICY_ERRORS])
def test_bad_policy_is_refused_naming_the_field_and_nothing_is_written(api, case, body, path):
    before = row_counts()

    response = post_json(api, "/api/v1/policies/", body)

    assert response.status_code == 400, response.content
    assert names(response.json(), *path), response.json()
    assert row_counts() == before


def test_every_problem_is_reported_at_once(api):
    body = valid_policy(rules={"min_grounding_score": 2, "min_citations": "x", "nope": 1}, enabled="no")

    errors = post_json(api, "/api/v1/policies/", body).json()

    assert set(errors["rules"]) == {"min_grounding_score", "min_citations", "nope"}
    assert "enabled" in errors


def test_duplicate_name_is_refused(api):
    create_policy(api, name="Strict Research Grounding")
    before = row_counts()

    response = post_json(api, "/api/v1/policies/", valid_policy(name="Strict Research Grounding"))

    assert response.status_code == 400
    assert names(response.json(), "name")
    assert row_counts() == before


def test_the_same_name_is_fine_in_another_tenant(api, other_api):
    create_policy(api, name="Strict Research Grounding")

    assert post_json(other_api, "/api/v1/policies/", valid_policy()).status_code == 201


def test_renaming_onto_another_policy_is_refused(api):
    create_policy(api, name="First")
    second = create_policy(api, name="Second")
    before = row_counts()

    response = api.patch(f"/api/v1/policies/{second['id']}/", {"name": "First"}, format="json")

    assert response.status_code == 400 and names(response.json(), "name")
    assert row_counts() == before


def test_infinity_via_1e999_is_not_a_score(api):
    before = row_counts()
    raw = json.dumps(valid_policy()).replace('"min_grounding_score": 0.8', '"min_grounding_score": 1e999')
    assert "1e999" in raw

    response = post_raw(api, "/api/v1/policies/", raw)

    assert response.status_code == 400
    assert names(response.json(), "rules", "min_grounding_score")
    assert row_counts() == before


@pytest.mark.parametrize(
    "change, path",
    [
        ('"name": "Strict \\ud800"', ("name",)),
        ('"description": "\\udc00", "name": "x"', ("description",)),
        ('"name": "x", "rules": {"\\ud800": 1}', ("rules", "\ud800")),
        ('"name": "x", "rules": {"abstention_response": "\\ud800"}', ("rules", "abstention_response")),
        ('"name": "x", "scope": {"agents": ["\\ud800"]}', ("scope",)),
        ('"name": "x", "\\ud800": 1', ("\ud800",)),
    ],
)
def test_lone_surrogates_are_refused_naming_the_field(api, change, path):
    before = row_counts()
    raw = '{"category": "grounding", ' + change + "}"

    response = post_raw(api, "/api/v1/policies/", raw)

    assert response.status_code == 400, response.content
    assert names(json.loads(response.content), *path), response.content
    assert row_counts() == before


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literals_are_malformed_json(api, literal):
    before = row_counts()
    raw = json.dumps(valid_policy()).replace('"min_grounding_score": 0.8', f'"min_grounding_score": {literal}')

    response = post_raw(api, "/api/v1/policies/", raw)

    assert response.status_code == 400
    assert row_counts() == before


@pytest.mark.parametrize(
    "case, change, path",
    [
        ("unknown rule key", {"rules": {"min_score": 0.5}}, ("rules", "min_score")),
        ("out of range", {"rules": {"min_grounding_score": 7}}, ("rules", "min_grounding_score")),
        ("unknown category", {"category": "quality"}, ("category",)),
        ("scope not a list", {"scope": {"agents": "x"}}, ("scope",)),
        ("unknown field", {"priority": 1}, ("priority",)),
        ("blank name", {"name": ""}, ("name",)),
    ],
)
@pytest.mark.parametrize("method", ["put", "patch"])
def test_bad_update_leaves_the_policy_untouched(api, method, case, change, path):
    created = create_policy(api)
    before = row_counts()
    body = {**valid_policy(), **change} if method == "put" else change

    response = getattr(api, method)(f"/api/v1/policies/{created['id']}/", body, format="json")

    assert response.status_code == 400, response.content
    assert names(response.json(), *path), response.json()
    assert row_counts() == before
    assert api.get(f"/api/v1/policies/{created['id']}/").json() == created


# --- Bodies that are not JSON objects -------------------------------------------------------

ENDPOINTS = [
    "/api/v1/policies/",
    "/api/v1/runs/",
    "runs/{id}/grounding/",
    "runs/{id}/spans/",
    "runs/{id}/complete/",
    "/api/v1/grounding/check/",
    "/api/v1/grounding/decide/",
]


def _path(template: str, run_id: int) -> str:
    return template if template.startswith("/") else "/api/v1/" + template.format(id=run_id)


@pytest.mark.parametrize("template", ENDPOINTS)
@pytest.mark.parametrize(
    "raw",
    ['{"agent_name": ', "{'agent_name': 'x'}", "not json", "\xff\xfe", '{"a": 1}}'],
    ids=["truncated", "single quotes", "bare words", "bad bytes", "trailing brace"],
)
def test_malformed_json_is_a_400(api, template, raw):
    run_id = start_run(api)
    before = row_counts()

    response = post_raw(api, _path(template, run_id), raw.encode("latin-1"))

    assert response.status_code == 400
    assert "detail" in response.json()
    assert row_counts() == before


@pytest.mark.parametrize("template", ENDPOINTS)
@pytest.mark.parametrize("raw", ["[]", '[{"agent_name": "x"}]', "null", "42", '"text"', "true"])
def test_a_body_that_is_not_an_object_is_a_400(api, template, raw):
    run_id = start_run(api)
    before = row_counts()

    response = post_raw(api, _path(template, run_id), raw)

    assert response.status_code == 400, response.content
    assert isinstance(response.json(), dict)
    assert row_counts() == before


@pytest.mark.parametrize("template", ENDPOINTS)
@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml"],
)
def test_wrong_content_type_is_refused(api, template, content_type):
    run_id = start_run(api)
    before = row_counts()

    response = post_raw(api, _path(template, run_id), '{"agent_name": "research-agent"}', content_type=content_type)

    assert response.status_code == 415
    assert row_counts() == before


@pytest.mark.parametrize("template", ENDPOINTS)
def test_an_oversized_body_is_a_413(api, template):
    run_id = start_run(api)
    before = row_counts()
    huge = json.dumps({"agent_name": "research-agent", "output": "x" * (2 * 1024 * 1024)})

    response = post_raw(api, _path(template, run_id), huge)

    assert response.status_code == 413
    assert "too large" in response.json()["detail"]
    assert row_counts() == before


def test_a_chunked_body_without_a_length_is_refused_not_read_as_empty(api):
    # Under WSGI, Django reads a body only up to Content-Length: a chunked report would arrive
    # empty and be recorded as a report with no scores.
    run_id = start_run(api)
    before = row_counts()

    response = api.generic(
        "POST",
        f"/api/v1/runs/{run_id}/grounding/",
        "",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )

    assert response.status_code == 411
    assert "Content-Length" in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.parametrize("template", ENDPOINTS)
def test_a_body_nested_a_hundred_thousand_deep_is_a_400(api, template):
    run_id = start_run(api)
    before = row_counts()

    response = post_raw(api, _path(template, run_id), "[" * 100_000 + "]" * 100_000)

    assert response.status_code == 400
    assert row_counts() == before


def test_nesting_inside_a_json_field_is_bounded(api):
    deep: object = "leaf"
    for _ in range(200):
        deep = {"k": deep}

    response = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent", "metadata": deep})

    assert response.status_code == 400
    assert names(response.json(), "metadata")


def _nested(levels: int, container=dict) -> dict:
    """A metadata object `levels` deep: the object itself is level 1, each object or array inside one more."""
    deep: object = {} if container is dict else []
    for _ in range(levels - 2):
        deep = {"k": deep} if container is dict else [deep]
    return {"k": deep}


@pytest.mark.parametrize("container", [dict, list])
def test_json_fields_take_64_levels_and_refuse_the_65th_as_documented(api, container):
    accepted = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent", "metadata": _nested(64, container)})
    assert accepted.status_code == 201, accepted.json()

    # Arrays nest without keys: an empty array on the 65th level was let through.
    refused = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent", "metadata": _nested(65, container)})
    assert refused.status_code == 400
    assert refused.json() == {"metadata": ["Must not nest deeper than 64 levels."]}


# --- Runs ----------------------------------------------------------------------------------

RUN_START_ERRORS = [
    ("no agent", {}, "agent_name"),
    ("agent not a string", {"agent_name": 42}, "agent_name"),
    ("agent blank", {"agent_name": "   "}, "agent_name"),
    ("agent name of 201 characters", {"agent_name": "a" * 201}, "agent_name"),
    ("agent name of a million characters", {"agent_name": "a" * 1_000_000}, "agent_name"),
    ("NUL in the agent", {"agent_name": "research\x00agent"}, "agent_name"),
    ("workflow not a string", {"agent_name": "a", "workflow_name": ["x"]}, "workflow_name"),
    ("metadata not an object", {"agent_name": "a", "metadata": [1]}, "metadata"),
    ("NUL inside metadata", {"agent_name": "a", "metadata": {"note": "a\x00b"}}, "metadata"),
    ("NUL in a metadata key", {"agent_name": "a", "metadata": {"a\x00": 1}}, "metadata"),
    ("NUL inside input", {"agent_name": "a", "input": ["ok", {"q": "\x00"}]}, "input"),
    ("unknown field", {"agent_name": "a", "enforce_policy": True}, "enforce_policy"),
]


@pytest.mark.parametrize("case, body, field", RUN_START_ERRORS, ids=[c[0] for c in RUN_START_ERRORS])
def test_bad_run_start_is_refused(api, case, body, field):
    before = row_counts()

    response = post_json(api, "/api/v1/runs/", body)

    assert response.status_code in (400, 413), response.content
    if response.status_code == 400:
        assert names(response.json(), field), response.json()
    assert row_counts() == before


@pytest.mark.parametrize(
    "raw, field",
    [
        ('{"agent_name": "a\\ud800b"}', "agent_name"),
        ('{"agent_name": "a", "metadata": {"x": 1e999}}', "metadata"),
        ('{"agent_name": "a", "input": {"q": "\\udfff"}}', "input"),
        ('{"agent_name": "a", "metadata": {"\\ud83d": 1}}', "metadata"),
    ],
)
def test_json_the_database_cannot_store_is_a_400(api, raw, field):
    before = row_counts()

    response = post_raw(api, "/api/v1/runs/", raw)

    assert response.status_code == 400, response.content
    assert names(response.json(), field)
    assert row_counts() == before


GROUNDING_ERRORS = [
    ("score above 1", {"grounding_scores": [0.9, 1.2]}, "grounding_scores"),
    ("negative score", {"grounding_scores": [-0.01]}, "grounding_scores"),
    ("score as a string", {"grounding_scores": ["0.9"]}, "grounding_scores"),
    ("score as a bool", {"grounding_scores": [True]}, "grounding_scores"),
    ("score null", {"grounding_scores": [None]}, "grounding_scores"),
    ("scores not a list", {"grounding_scores": 0.9}, "grounding_scores"),
    ("scores an object", {"grounding_scores": {"a": 0.9}}, "grounding_scores"),
    ("citations a string", {"citations": "Federal Reserve Report"}, "citations"),
    ("citation a number", {"citations": [1]}, "citations"),
    ("citation blank", {"citations": [""]}, "citations"),
    ("citation with NUL", {"citations": ["a\x00"]}, "citations"),
    ("claims a number", {"unsupported_claims": 2}, "unsupported_claims"),
    ("claim an object", {"unsupported_claims": [{"text": "x"}]}, "unsupported_claims"),
    ("confidence above 1", {"output_confidence": 1.5}, "output_confidence"),
    ("confidence a string", {"output_confidence": "high"}, "output_confidence"),
    ("output a list", {"output": ["x"]}, "output"),
    ("source without id", {"sources": [{"text": "x"}]}, "sources"),
    ("source with unknown key", {"sources": [{"id": "a", "url": "x"}]}, "sources"),
    ("source not an object", {"sources": ["a"]}, "sources"),
    ("source score above 1", {"sources": [{"id": "a", "score": 3}]}, "sources"),
    ("misspelt field", {"grounding_score": [0.9]}, "grounding_score"),
    ("too many scores", {"grounding_scores": [0.5] * 10_001}, "grounding_scores"),
]


@pytest.mark.parametrize("case, body, field", GROUNDING_ERRORS, ids=[c[0] for c in GROUNDING_ERRORS])
def test_bad_grounding_report_is_refused(api, case, body, field):
    create_policy(api)
    run_id = start_run(api)
    before = row_counts()

    response = ground(api, run_id, **body)

    assert response.status_code == 400, response.content
    assert names(response.json(), field), response.json()
    assert row_counts() == before


@pytest.mark.parametrize(
    "raw, field",
    [
        ('{"grounding_scores": [1e999]}', "grounding_scores"),
        ('{"grounding_scores": [-1e999]}', "grounding_scores"),
        ('{"grounding_scores": [1' + "0" * 400 + "]}", "grounding_scores"),
        ('{"output_confidence": 1e999}', "output_confidence"),
        ('{"output_confidence": 1' + "0" * 400 + "}", "output_confidence"),
        ('{"citations": ["\\ud800"]}', "citations"),
        ('{"output": "\\u0000"}', "output"),
    ],
)
def test_grounding_values_the_engine_or_database_cannot_take_are_a_400(api, raw, field):
    run_id = start_run(api)
    before = row_counts()

    response = post_raw(api, f"/api/v1/runs/{run_id}/grounding/", raw)

    assert response.status_code == 400, response.content
    assert names(response.json(), field)
    assert row_counts() == before


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "database", "name": "x"}, "kind"),
        ({"name": "x"}, "kind"),
        ({"kind": "tool"}, "name"),
        ({"kind": "tool", "name": "x", "started_at": "yesterday"}, "started_at"),
        (
            {"kind": "tool", "name": "x", "started_at": "2026-01-01T10:00:00Z", "ended_at": "2026-01-01T09:00:00Z"},
            "ended_at",
        ),
        ({"kind": "tool", "name": "x", "attributes": [1]}, "attributes"),
        ({"kind": "tool", "name": "x", "output": {"t": "\x00"}}, "output"),
        ({"kind": "tool", "name": "x", "duration": 3}, "duration"),
    ],
)
def test_bad_span_is_refused(api, body, field):
    run_id = start_run(api)
    before = row_counts()

    response = post_json(api, f"/api/v1/runs/{run_id}/spans/", body)

    assert response.status_code == 400, response.content
    assert names(response.json(), field), response.json()
    assert row_counts() == before


@pytest.mark.parametrize(
    "body, field",
    [
        ({"error": 5}, "error"),
        ({"output": {"a": 1}}, "output"),
        ({"result": {"a": "\x00"}}, "result"),
        ({"status": "done"}, "status"),
    ],
)
def test_bad_completion_is_refused_and_the_run_stays_open(api, body, field):
    run_id = start_run(api)
    before = row_counts()

    response = post_json(api, f"/api/v1/runs/{run_id}/complete/", body)

    assert response.status_code == 400, response.content
    assert names(response.json(), field)
    assert row_counts() == before
    assert api.get(f"/api/v1/runs/{run_id}/").json()["status"] == "running"


# --- Odd but valid text --------------------------------------------------------------------


@pytest.mark.parametrize(
    "agent_name", ["研究-агент-🤖", "ünïcödé agent", "agent with spaces", "a" * 200, "'; DROP TABLE--"]
)
def test_unusual_but_valid_agent_names_round_trip(api, agent_name):
    create_policy(api, agents=[agent_name])
    run_id = start_run(api, agent_name=agent_name)

    decision = ground(api, run_id, grounding_scores=[0.1], citations=["Ω source 📚"]).json()["decision"]

    assert decision["action"] == "block"
    assert api.get(f"/api/v1/runs/{run_id}/").json()["agent_name"] == agent_name
    listed = api.get("/api/v1/evaluations/", {"agent": agent_name}).json()["results"]
    assert {e["agent_name"] for e in listed} == {agent_name}


def test_emoji_in_policy_names_and_rules_round_trip(api):
    body = create_policy(api, name="Ground 🌍 truth", rules={"abstention_response": "Je ne sais pas — 🤷"})

    assert api.get(f"/api/v1/policies/{body['id']}/").json()["name"] == "Ground 🌍 truth"
    assert body["rules"]["abstention_response"] == "Je ne sais pas — 🤷"


# --- Ids in the path -----------------------------------------------------------------------


@pytest.mark.parametrize("ident", ["-1", "0", "abc", "1.5", "99999999999999999999999", "9223372036854775808", "%00"])
@pytest.mark.parametrize(
    "suffix, method, body",
    [
        ("", "get", {}),
        ("grounding/", "post", {"grounding_scores": [0.9]}),
        ("spans/", "post", {"kind": "tool", "name": "search"}),
        ("complete/", "post", {}),
    ],
)
def test_odd_run_ids_are_not_found(api, ident, suffix, method, body):
    start_run(api)
    before = row_counts()

    response = getattr(api, method)(f"/api/v1/runs/{ident}/{suffix}", body, format="json")

    assert response.status_code == 404
    assert row_counts() == before


@pytest.mark.parametrize("ident", ["-1", "0", "abc", "99999999999999999999999"])
@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_odd_policy_ids_are_not_found(api, ident, method):
    response = getattr(api, method)(f"/api/v1/policies/{ident}/", valid_policy(), format="json")

    assert response.status_code == 404


# --- Query strings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, field",
    [
        ("action=explode", "action"),
        ("phase=during", "phase"),
        ("since=yesterday", "since"),
        ("until=2026-13-45", "until"),
        ("run=abc", "run"),
        ("run=-4", "run"),
        ("run=99999999999999999999999", "run"),
        ("review_state=maybe", "review_state"),
        ("cursor=not-a-cursor", "cursor"),
        ("cursor=cD1hYmM%3D", "cursor"),  # base64 of "p=abc": a position that is not an id
        ("agent=a%00b", "agent"),
    ],
)
def test_bad_evaluation_filters_are_a_400(api, query, field):
    response = api.get(f"/api/v1/evaluations/?{query}")

    assert response.status_code == 400, response.content
    assert names(response.json(), field), response.json()


@pytest.mark.parametrize(
    "path", ["/api/v1/runs/?status=exploded", "/api/v1/runs/?since=soon", "/api/v1/audit-log/?since=never"]
)
def test_bad_list_filters_are_a_400(api, path):
    assert api.get(path).status_code == 400


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/evaluations/",
        "/api/v1/evaluations/export",
        "/api/v1/runs/",
        "/api/v1/audit-log/",
        "/api/v1/audit-log/export",
    ],
)
@pytest.mark.parametrize(
    "field, moment", [("until", "9999-12-31T23:59:59-01:00"), ("since", "0001-01-01T00:00:00+01:00")]
)
def test_a_moment_past_the_calendar_in_utc_is_a_400_naming_its_field(api, path, field, moment):
    # in the year 10000 or before the year 1 in UTC: a 500 on every list until 2026-12-06
    response = api.get(path, {field: moment})

    assert response.status_code == 400, response.content
    assert response.json()[field] == ["Must be between the years 1 and 9999 in UTC."]


@pytest.mark.parametrize("value", ["²", "٣", "99999999999999999999999", "   ", "🤖"])
def test_odd_policy_filters_match_nothing(api, value):
    response = api.get("/api/v1/evaluations/", {"policy": value})

    assert response.status_code == 200
    assert response.json()["results"] == []


# --- Fuzzing -------------------------------------------------------------------------------

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**500), max_value=10**500)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
GROUNDING_KEYS = ["grounding_scores", "citations", "unsupported_claims", "output_confidence", "output", "sources"]
grounding_payloads = (
    st.dictionaries(st.sampled_from(GROUNDING_KEYS) | any_text, json_values, max_size=7)
    | st.fixed_dictionaries(
        {},
        optional={
            "grounding_scores": st.lists(st.floats(allow_nan=False) | json_values, max_size=5),
            "citations": st.lists(any_text | json_values, max_size=5),
            "unsupported_claims": st.lists(any_text, max_size=3) | json_values,
            "output_confidence": st.floats() | json_values,
            "output": any_text | json_values,
            "sources": st.lists(
                st.fixed_dictionaries({"id": any_text}, optional={"text": any_text, "score": st.floats()})
                | json_values,
                max_size=3,
            ),
        },
    )
    | json_values
)


def _encode(value) -> bytes:
    # ensure_ascii turns lone surrogates into \ud800 escapes, which the server's parser accepts.
    return json.dumps(value, allow_nan=True).encode()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(payload=grounding_payloads)
def test_no_grounding_payload_causes_a_server_error(api, acme, payload):
    with scopes_disabled():
        if not Policy.objects.filter(tenant=acme).exists():
            create_policy(api, agents=[])
    run_id = start_run(api)

    response = post_raw(api, f"/api/v1/runs/{run_id}/grounding/", _encode(payload))

    assert response.status_code < 500, (payload, response.content)
    assert response.status_code in (200, 400, 413)
    assert isinstance(response.json(), dict)


run_payloads = (
    st.dictionaries(
        st.sampled_from(["agent_name", "workflow_name", "input", "metadata"]) | any_text, json_values, max_size=5
    )
    | json_values
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(payload=run_payloads)
def test_no_run_start_payload_causes_a_server_error(api, payload):
    response = post_raw(api, "/api/v1/runs/", _encode(payload))

    assert response.status_code in (201, 400), (payload, response.content)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    rules=st.dictionaries(
        st.sampled_from(list(STRICT) + ["score_top_n", "score_eval_mode"]) | any_text, json_values, max_size=4
    ),
    scope=json_values,
)
def test_no_policy_payload_causes_a_server_error(api, rules, scope):
    body = {"name": "Fuzzed", "category": "grounding", "rules": rules, "scope": scope}

    response = post_raw(api, "/api/v1/policies/", _encode(body))

    assert response.status_code in (201, 400), (body, response.content)
    if response.status_code == 201:
        assert api.delete(f"/api/v1/policies/{response.json()['id']}/").status_code == 204


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    params=st.dictionaries(
        st.sampled_from(
            [
                "action",
                "phase",
                "agent",
                "policy",
                "since",
                "until",
                "run",
                "cursor",
                "page_size",
                "review_state",
                "source",
            ]
        ),
        st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=25),
        max_size=4,
    )
)
def test_no_evaluation_filter_causes_a_server_error(api, params):
    response = api.get("/api/v1/evaluations/", params)

    assert response.status_code in (200, 400), (params, response.content)


# --- Hostile bodies on every endpoint that takes one ---------------------------------------

# (method, path template, a minimal valid body): every endpoint with a JSON body.
BODY_ENDPOINTS = [
    ("post", "/api/v1/policies/", {"name": "P", "category": "grounding"}),
    ("put", "/api/v1/policies/{policy}/", {"name": "P", "category": "grounding"}),
    ("patch", "/api/v1/policies/{policy}/", {"description": "d"}),
    ("post", "/api/v1/runs/", {"agent_name": "research-agent"}),
    ("post", "/api/v1/runs/{run}/grounding/", {"grounding_scores": [0.9]}),
    ("post", "/api/v1/runs/{run}/spans/", {"kind": "tool", "name": "search"}),
    ("post", "/api/v1/runs/{run}/complete/", {"output": "done"}),
    ("post", "/api/v1/grounding/check/", {"text": "x", "sources": []}),
    ("post", "/api/v1/grounding/decide/", {"agent_name": "research-agent"}),
    ("put", "/api/v1/secrets/OPENAI_API_KEY/", {"value": "sk-1"}),
]
BODY_IDS = [f"{method} {path}" for method, path, _ in BODY_ENDPOINTS]


def _send(client, method: str, template: str, raw, content_type: str = "application/json"):
    run_id = start_run(client)
    policy_id = create_policy(client, name=f"Target {run_id}")["id"]
    path = template.format(run=run_id, policy=policy_id)
    before = row_counts()
    response = client.generic(method.upper(), path, raw, content_type=content_type)
    return response, before


@pytest.mark.parametrize("method, template, body", BODY_ENDPOINTS, ids=BODY_IDS)
def test_a_ten_megabyte_body_is_a_413_before_it_is_read(api, method, template, body):
    raw = json.dumps({**body, "padding": "x" * (10 * 1024 * 1024)})

    response, before = _send(api, method, template, raw)

    assert response.status_code == 413
    assert "too large" in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.parametrize("method, template, body", BODY_ENDPOINTS, ids=BODY_IDS)
@pytest.mark.parametrize(
    "raw",
    [b'{"name": "\xff\xfe"}', b"\xc3\x28", b'{"a": "\xed\xa0\x80"}'],
    ids=["latin-1 bytes", "broken two-byte sequence", "encoded surrogate"],
)
def test_invalid_utf8_is_a_400(api, method, template, body, raw):
    response, before = _send(api, method, template, raw)

    assert response.status_code == 400, response.content
    assert "detail" in response.json()
    assert row_counts() == before


@pytest.mark.parametrize("method, template, body", BODY_ENDPOINTS, ids=BODY_IDS)
def test_an_unknown_field_is_a_400_naming_it_on_every_endpoint(api, method, template, body):
    response, before = _send(api, method, template, json.dumps({**body, "surprise": 1}))

    assert response.status_code == 400, response.content
    assert response.json() == {"surprise": ["Unknown field."]}
    assert row_counts() == before


# (method, path template, raw body, the field the error must name)
NON_FINITE = [
    ("post", "/api/v1/runs/{run}/grounding/", '{"grounding_scores": [NaN]}', None),
    ("post", "/api/v1/runs/{run}/grounding/", '{"output_confidence": Infinity}', None),
    ("post", "/api/v1/runs/{run}/grounding/", '{"grounding_scores": [1e309]}', "grounding_scores"),
    ("post", "/api/v1/runs/{run}/grounding/", '{"sources": [{"id": "a", "score": 1e309}]}', "sources"),
    ("post", "/api/v1/runs/{run}/complete/", '{"result": {"x": 1e309}}', "result"),
    ("post", "/api/v1/runs/{run}/spans/", '{"kind": "tool", "name": "t", "output": [-1e309]}', "output"),
    ("post", "/api/v1/grounding/check/", '{"text": "x", "sources": [], "entailment_threshold": NaN}', None),
    (
        "post",
        "/api/v1/grounding/check/",
        '{"text": "x", "sources": [], "entailment_threshold": 1e309}',
        "entailment_threshold",
    ),
    ("post", "/api/v1/grounding/check/", '{"text": "x", "sources": [{"text": "y", "score": 1e309}]}', "sources"),
    (
        "post",
        "/api/v1/grounding/decide/",
        '{"agent_name": "a", "prepared_documents": [{"n": 1e309}]}',
        "prepared_documents",
    ),
    ("patch", "/api/v1/policies/{policy}/", '{"rules": {"min_grounding_score": 1e309}}', "rules"),
    ("patch", "/api/v1/policies/{policy}/", '{"rules": {"min_grounding_score": NaN}}', None),
]


@pytest.mark.parametrize("method, template, raw, field", NON_FINITE, ids=[c[2] for c in NON_FINITE])
def test_nan_and_overflowing_numbers_are_a_400(api, method, template, raw, field):
    # NaN and Infinity are not JSON (a parse error, `detail`); 1e309 is JSON that overflows a
    # double to infinity, refused by the field that received it.
    response, before = _send(api, method, template, raw)

    assert response.status_code == 400, response.content
    assert names(response.json(), field or "detail"), response.json()
    assert row_counts() == before


# (method, path template, raw body with a NUL escape, the field the error must name)
NUL_BODIES = [
    ("post", "/api/v1/runs/{run}/spans/", '{"kind": "tool", "name": "a\\u0000b"}', "name"),
    ("post", "/api/v1/runs/{run}/complete/", '{"output": "\\u0000"}', "output"),
    ("post", "/api/v1/runs/{run}/complete/", '{"error": "boom\\u0000"}', "error"),
    ("post", "/api/v1/grounding/check/", '{"text": "a\\u0000", "sources": []}', "text"),
    ("post", "/api/v1/grounding/check/", '{"text": "x", "sources": ["a\\u0000"]}', "sources"),
    ("post", "/api/v1/grounding/check/", '{"text": "x", "sources": [{"id": "\\u0000", "text": "y"}]}', "sources"),
    ("post", "/api/v1/grounding/decide/", '{"agent_name": "a\\u0000"}', "agent_name"),
    ("post", "/api/v1/grounding/decide/", '{"agent_name": "a", "retrieved_text": "\\u0000"}', "retrieved_text"),
    ("put", "/api/v1/secrets/OPENAI_API_KEY/", '{"value": "sk-\\u0000"}', "value"),
    ("patch", "/api/v1/policies/{policy}/", '{"scope": {"agents": ["a\\u0000"]}}', "scope"),
]


@pytest.mark.parametrize("method, template, raw, field", NUL_BODIES, ids=[c[2] for c in NUL_BODIES])
def test_nul_characters_are_a_400_naming_the_field(api, method, template, raw, field):
    response, before = _send(api, method, template, raw)

    assert response.status_code == 400, response.content
    assert names(response.json(), field), response.json()
    assert row_counts() == before


# --- Pages of every list -------------------------------------------------------------------

LISTS = ["/api/v1/runs/", "/api/v1/evaluations/", "/api/v1/audit-log/", "/api/v1/policies/"]


def _cursor(query: str) -> str:
    return base64.b64encode(query.encode()).decode()


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("page_size", ["1000000000", "501", "0", "-1", "abc", "1e3", "9" * 30, "²"])
def test_a_page_size_outside_one_to_five_hundred_is_a_400(api, path, page_size):
    create_policy(api)
    start_run(api)

    response = api.get(path, {"page_size": page_size})

    assert response.status_code == 400, response.content
    assert response.json() == {"page_size": ["Must be a whole number from 1 to 500."]}


@pytest.mark.parametrize("path", LISTS)
def test_the_largest_page_size_is_honoured(api, path):
    assert api.get(path, {"page_size": "500"}).status_code == 200


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(
    "cursor",
    [
        _cursor("o=-5&p=3"),
        _cursor("o=-1"),
        _cursor("r=1&p=-3"),
        _cursor("p=3.5"),
        _cursor("p=" + "9" * 30),
        "-1",
        "%%%",
        "\u00e9",
    ],
    ids=[
        "negative offset",
        "negative offset alone",
        "negative position",
        "fractional position",
        "huge position",
        "minus one",
        "percent signs",
        "not base64",
    ],
)
def test_a_negative_or_garbage_cursor_is_a_400(api, path, cursor):
    create_policy(api)
    start_run(api)

    response = api.get(path, {"cursor": cursor})

    assert response.status_code == 400, response.content
    assert response.json() == {"cursor": ["Invalid cursor."]}


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/",
        "/api/v1/evaluations/",
        "/api/v1/audit-log/",
        "/api/v1/evaluations/export",
        "/api/v1/audit-log/export",
        # Lists without a FilterSet: they ignored any parameter, so a misspelt `since` answered every day.
        "/api/v1/score-audit/",
        "/api/v1/webhooks/",
        # Whole lists, not paginated: a page_size there was silently ignored.
        "/api/v1/secrets/",
        "/api/v1/api-keys/",
    ],
)
def test_an_unknown_query_parameter_is_a_400_naming_it(api, acme, path):
    response = api.get(path, {"agnet": "research-agent"})
    assert response.status_code == 400
    assert response.json() == {"agnet": ["Unknown query parameter."]}
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    assert "400" in schema["paths"][path]["get"]["responses"]  # and the schema says so
