"""The OpenAPI schema describes the API exactly: every body, every answer, every error.

What the schema promises is checked here by reading it; tests/test_api_fuzz.py checks that the
server keeps the promises on generated requests, and the last tests here on chosen ones (a block
with its abstention response, a verifier evaluation, a completed run) that random data rarely reaches.
"""

import pytest
import schemathesis
from api_support import STRICT, create_policy, start_run
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from rest_framework.test import APIClient
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application
from tenants.audit import Actor
from tenants.services import api_key_create

# Committed rows: see tests/test_api_fuzz.py (the WSGI handler and the test's transaction on PostgreSQL).
pytestmark = pytest.mark.django_db(transaction=True)

BODY_METHODS = ("post", "put", "patch")
# Actions on the URL's object that take no body.
BODILESS_ACTIONS = {("post", "/api/v1/webhooks/{id}/deliveries/{delivery_pk}/redeliver/")}
LISTS = ["/api/v1/runs/", "/api/v1/evaluations/", "/api/v1/audit-log/", "/api/v1/policies/"]
EXPORTS = ["/api/v1/evaluations/export", "/api/v1/audit-log/export"]


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()


def _operations(schema):
    # The JSON API's contract; /v1/traces speaks OTLP (protobuf or JSON, its own error format).
    for path, item in schema["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in item.items():
            yield path, method, operation


def _resolve(schema, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _json_body(schema, operation, code: str) -> dict:
    return _resolve(schema, operation["responses"][code]["content"]["application/json"]["schema"])


def test_every_operation_is_authenticated_by_an_api_key(schema):
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for path, method, operation in _operations(schema):
        if (method, path) in PUBLIC_OPERATIONS:
            assert operation.get("security", []) == [] and "401" not in operation["responses"], (method, path)
            continue
        assert operation["security"] == [{"ApiKey": []}], (method, path)
        assert "401" in operation["responses"], (method, path)


# Public keys are public: an auditor checks a checkpoint with no API key of the tenant (docs/security.md).
PUBLIC_OPERATIONS = {("get", "/api/v1/audit-log/keys/")}


def test_every_request_body_is_a_named_strict_object(schema):
    bodies = 0
    for path, method, operation in _operations(schema):
        if method not in BODY_METHODS or (method, path) in BODILESS_ACTIONS:
            assert "requestBody" not in operation, (method, path)
            continue
        bodies += 1
        assert list(operation["requestBody"]["content"]) == ["application/json"], (method, path)
        body = _resolve(schema, operation["requestBody"]["content"]["application/json"]["schema"])
        assert body["type"] == "object" and body["properties"], (method, path)
        assert body["additionalProperties"] is False, (method, path)
        assert {"400", "411", "413", "415"} <= set(operation["responses"]), (method, path)
    assert bodies >= 12  # runs (4), check, decide, policies (3), secrets, rollback, replay: new ones add to it


def test_nested_input_objects_are_strict_too(schema):
    components = schema["components"]["schemas"]
    for name in ("SourceInRequest", "ScopeInRequest"):
        assert components[name]["additionalProperties"] is False, name
    citation_forms = components["GroundingInRequest"]["properties"]["citations"]["items"]["oneOf"]
    assert [form["type"] for form in citation_forms] == ["string", "object"]
    assert citation_forms[1]["additionalProperties"] is False


def test_every_success_is_a_described_body_never_a_bare_object(schema):
    for path, method, operation in _operations(schema):
        successes = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
        assert successes, (method, path)
        for code, answer in successes.items():
            if code == "204":
                assert "content" not in answer
                continue
            for media_type, content in answer["content"].items():
                body = _resolve(schema, content["schema"])
                if media_type == "application/json":
                    # One body, or one of a few (a run read with the deprecated expand=all), each described.
                    for form in [_resolve(schema, one) for one in body.get("oneOf", [body])]:
                        assert form["type"] == "object" and form["properties"], (method, path, code)
                        # Every key of a top-level answer is always there.
                        assert set(form["required"]) == set(form["properties"]), (method, path, code)


@pytest.mark.parametrize("path", LISTS)
def test_lists_are_documented_with_their_cursor_envelope(schema, path):
    operation = schema["paths"][path]["get"]
    page = _json_body(schema, operation, "200")

    assert set(page["required"]) == {"next", "previous", "results"}
    assert page["properties"]["next"]["nullable"] is True
    assert page["properties"]["results"]["type"] == "array"
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
    # Not any string: `cursor=` and text outside base64 are 400s, and the schema says so.
    assert parameters["cursor"]["schema"] == {"type": "string", "minLength": 4, "pattern": "^[A-Za-z0-9+/]+={0,2}$"}
    assert "400" in operation["responses"]


def test_query_parameters_say_what_the_server_accepts(schema):
    # Found by schemathesis with positive data acceptance: each of these was a 400 for a value the
    # schema allowed.
    evaluations = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/evaluations/"]["get"]["parameters"]}
    assert evaluations["agent"] == {"type": "string", "minLength": 1}
    assert evaluations["since"] == {"type": "string", "format": "date-time"}
    assert evaluations["shadow"] == {"type": "string", "enum": ["true", "false", "1", "0"]}
    assert evaluations["run"] == {"type": "integer", "minimum": 1, "maximum": 2**63 - 1}
    score_audit = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/score-audit/"]["get"]["parameters"]}
    assert score_audit["until"] == {"type": "string", "format": "date-time"}
    secret = schema["paths"]["/api/v1/secrets/{name}/"]["put"]["parameters"][0]
    assert secret["schema"]["pattern"] == "^[A-Z][A-Z0-9_]{0,63}$"
    rules = _resolve(
        schema, schema["paths"]["/api/v1/policies/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    )["properties"]["rules"]
    assert rules["additionalProperties"] is False and "min_grounding_score" in rules["properties"]
    model = rules["properties"]["nli_escalation_model"]
    assert model["pattern"].startswith("^(?:gpt\\-|") or model["pattern"].startswith("^(?:gpt")


def test_list_filters_are_documented(schema):
    names = {p["name"] for p in schema["paths"]["/api/v1/evaluations/"]["get"]["parameters"]}
    assert {"action", "phase", "agent", "policy", "since", "until", "review_state", "run", "source"} <= names
    names = {p["name"] for p in schema["paths"]["/api/v1/evaluations/export"]["get"]["parameters"]}
    assert {"action", "phase", "agent", "format"} <= names
    assert "cursor" not in names


@pytest.mark.parametrize("path", EXPORTS)
def test_exports_are_documented_as_csv_and_json_lines(schema, path):
    operation = schema["paths"][path]["get"]

    assert set(operation["responses"]["200"]["content"]) == {"text/csv; charset=utf-8", "application/x-ndjson"}
    fmt = next(p for p in operation["parameters"] if p["name"] == "format")
    assert fmt["schema"]["enum"] == ["csv", "jsonl"]


BODY_REFERENCES = {("post", "/api/v1/policies/replay/")}


def test_errors_have_one_documented_shape(schema):
    components = schema["components"]["schemas"]
    assert components["Error"]["required"] == ["detail", "request_id"]
    assert "additionalProperties" in components["ValidationError"]
    for path, method, operation in _operations(schema):
        for code, answer in operation["responses"].items():
            if code.startswith("4"):
                ref = answer["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ValidationError" if code == "400" else "/Error"), (method, path, code)
        # A 404 answers an object of the URL, or one a body names by id (another tenant's is not found).
        names_an_object = "{" in path or (method, path) in BODY_REFERENCES
        assert ("404" in operation["responses"]) == names_an_object, (method, path)


@pytest.mark.parametrize("path", ["/api/v1/runs/{id}/grounding/", "/api/v1/runs/{id}/complete/"])
def test_a_second_completion_and_a_late_report_are_documented_conflicts(schema, path):
    assert "409" in schema["paths"][path]["post"]["responses"]


def test_run_id_is_the_name_in_every_run_action_and_id_a_deprecated_alias(schema):
    start = _json_body(schema, schema["paths"]["/api/v1/runs/"]["post"], "201")
    report = _json_body(schema, schema["paths"]["/api/v1/runs/{id}/grounding/"]["post"], "200")
    done = _json_body(schema, schema["paths"]["/api/v1/runs/{id}/complete/"]["post"], "200")

    assert {"run_id", "status", "decision"} <= set(start["required"])
    assert start["properties"]["id"]["deprecated"] is True
    assert set(report["required"]) == set(done["required"]) == {"run_id", "status", "decision"}
    assert "id" not in report["properties"]


def test_the_decision_is_described_down_to_each_evaluation(schema):
    decision = _resolve(
        schema,
        _json_body(schema, schema["paths"]["/api/v1/runs/{id}/grounding/"]["post"], "200")["properties"]["decision"],
    )
    evaluation = _resolve(schema, decision["properties"]["evaluations"]["items"])

    assert set(decision["required"]) == {"action", "phase", "reason", "evaluations"}
    assert "abstention_response" in decision["properties"]
    assert set(evaluation["required"]) == {
        "policy_id",
        "policy_name",
        "category",
        "phase",
        "action",
        "reason",
        "metadata",
    }
    assert _resolve(schema, evaluation["properties"]["action"])["enum"] == ["allow", "warn", "block"]
    start = _json_body(schema, schema["paths"]["/api/v1/runs/"]["post"], "201")
    assert "grounding_context" in _resolve(schema, start["properties"]["decision"])["required"]


# --- Chosen requests, answered as the schema says ----------------------------------------------


@pytest.fixture
def live(acme_key, django_db_blocker):
    """Send a request through the WSGI application and validate the answer against the schema."""
    # Before any request: at its end the WSGI handler would close the connection that holds the
    # test's transaction (its autocommit is off), as Django's own test client avoids the same way.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    with django_db_blocker.unblock():
        loaded = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
    headers = {"Authorization": f"Bearer {acme_key[1]}"}

    def send(method: str, path: str, body=None, **path_parameters):
        extra = {"body": body, "media_type": "application/json"} if body is not None else {}
        case = loaded[path][method.upper()].Case(path_parameters=path_parameters or None, **extra)
        response = case.call(headers=headers)
        case.validate_response(
            response,
            checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
        )
        return response

    yield send
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_a_block_with_its_abstention_response_conforms(api, live):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)

    response = live("post", "/api/v1/runs/{id}/grounding/", {"grounding_scores": [0.1]}, id=run_id)

    body = response.json()
    assert body["decision"]["action"] == "block" and body["decision"]["abstention_response"]
    assert body["run_id"] == run_id


def test_a_run_from_start_to_a_second_completion_conforms(api, live):
    create_policy(api, rules={"min_citations": 1, "action_on_violation": "warn"})

    started = live("post", "/api/v1/runs/", {"agent_name": "research-agent", "metadata": {"k": [1, None]}}).json()
    run_id = started["run_id"]
    live("post", "/api/v1/runs/{id}/spans/", {"kind": "retrieval", "name": "search", "attributes": {}}, id=run_id)
    live(
        "post",
        "/api/v1/runs/{id}/grounding/",
        {"citations": [{"source_id": "a", "quote": "q"}], "sources": [{"id": "a", "text": "t", "score": 0.5}]},
        id=run_id,
    )
    done = live("post", "/api/v1/runs/{id}/complete/", {"output": "answer"}, id=run_id)
    again = live("post", "/api/v1/runs/{id}/complete/", {"output": "answer"}, id=run_id)
    detail = live("get", "/api/v1/runs/{id}/", id=run_id).json()

    assert started["id"] == run_id and done.json()["run_id"] == run_id
    assert again.status_code == 409
    assert detail["counts"] == {"reports": 1, "evaluations": 3, "violations": 2, "spans": 1}
    assert detail["latest_decision"]["phase"] == "after_workflow"
    for which in ("reports", "evaluations", "spans"):
        assert live("get", f"/api/v1/runs/{{id}}/{which}/", id=run_id).json()["results"], which
    for path in LISTS:
        assert live("get", path).json()["results"], path


def test_a_verifier_check_with_every_verdict_conforms(live):
    body = {
        "text": "Premium users get 500 requests per minute. The moon is made of cheese.",
        "sources": ["Premium users get 1,000 requests per minute.", {"id": "b", "text": "Free users get 100."}],
    }

    answer = live("post", "/api/v1/grounding/check/", body).json()

    assert answer["contradicted_count"] >= 1


def test_a_context_decision_under_a_policy_conforms(api, live):
    create_policy(api, rules={"context_mode": "chunks_only", "max_context_chars": 5})

    answer = live(
        "post", "/api/v1/grounding/decide/", {"agent_name": "research-agent", "retrieved_text": "0123456789"}
    ).json()

    assert answer["grounding_context"]["policy_id"] is not None


def test_secrets_and_policies_conform(api, live):
    created = live("put", "/api/v1/secrets/{name}/", {"value": "sk-1"}, name="OPENAI_API_KEY")
    replaced = live("put", "/api/v1/secrets/{name}/", {"value": "sk-2"}, name="OPENAI_API_KEY")
    listed = live("get", "/api/v1/secrets/").json()
    policy = live("post", "/api/v1/policies/", {"name": "P", "category": "grounding", "id": 7, "version": 3}).json()
    live("patch", "/api/v1/policies/{id}/", {"enabled": False}, id=policy["id"])
    live("delete", "/api/v1/policies/{id}/", id=policy["id"])

    assert (created.status_code, replaced.status_code) == (201, 200)
    assert [s["name"] for s in listed["results"]] == ["OPENAI_API_KEY"]


def test_every_operation_documents_the_rate_limit_and_every_scoped_one_403(schema):
    # Every API view is throttled per key (tenants.throttling), and a view that declares no scope
    # needs an admin key (webhooks): both answers were given but not documented.
    for path, method, operation in _operations(schema):
        if (method, path) in PUBLIC_OPERATIONS:  # no key to count against: a fixed answer, no throttle
            assert not {"403", "429"} & set(operation["responses"]), (method, path)
            continue
        assert "429" in operation["responses"], (method, path)
        if path != "/api/v1/ping/":
            assert "403" in operation["responses"], (method, path)
    assert "403" not in schema["paths"]["/api/v1/ping/"]["get"]["responses"]


def test_a_request_over_the_rate_limit_conforms(live, settings):
    settings.API_RATE_LIMIT = "1/min"

    live("get", "/api/v1/ping/")
    response = live("get", "/api/v1/ping/")

    assert response.status_code == 429 and response.headers["retry-after"]


def test_a_key_without_the_admin_scope_is_refused_webhooks_as_documented(acme, live):
    _, raw = api_key_create(tenant=acme, name="agent", actor=Actor.system("tests"), scope="agent")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert client.get("/api/v1/webhooks/").status_code == 403


def test_a_new_api_key_answers_its_raw_key_as_documented(schema, live):
    created = _json_body(schema, schema["paths"]["/api/v1/api-keys/"]["post"], "201")

    response = live("post", "/api/v1/api-keys/", {"name": "ci", "scope": "read"})

    assert "key" in created["required"] and created["properties"]["key"]["type"] == "string"
    body = response.json()
    assert set(body) == set(created["properties"])
    assert body["key"].startswith(body["prefix"].rstrip("…"))
    assert response.headers["cache-control"] == ["no-store"]


def test_the_schema_builds_without_warnings_and_validates(tmp_path):
    # A warning is a name or type spectacular had to guess (a colliding enum came out "Scope985Enum",
    # a name that changes from build to build and that a generated client would use).
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "schema.yaml"))
