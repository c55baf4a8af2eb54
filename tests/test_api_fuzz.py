"""The whole API fuzzed from its own schema: schemathesis over /api/v1/schema/.

Every operation gets schema-valid and schema-invalid requests (a fixed seed, a bounded number of
examples each), sent to the real WSGI application:

- with an API key: never a 5xx; every status, content type and body is one the schema declares;
  every request the schema calls invalid is refused with a 4xx (so the schema is no looser than
  the server: `additionalProperties: false`, ranges, enums and types hold); and every request it
  calls valid is accepted (so it is no stricter either), but for the known false positives below;
- with a dashboard session and no key: the API takes keys only, so every operation answers the
  declared 401, as JSON, never a 5xx or a page.

Path ids are half random, half real objects of the tenant, so the success paths (a decision,
a span, a completed run, a policy update) are checked against the schema too, not only 404s.
`make test` runs it; alone: `pytest -m fuzz`.
"""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.config._checks import NegativeDataRejectionConfig
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application
from core.text import NUL_MESSAGE, UNICODE_MESSAGE
from governance.filters import OUT_OF_RANGE_IN_UTC

# Committed rows (not the usual rolled-back transaction): the WSGI handler closes a connection it
# finds inside a transaction at the end of each request, which on PostgreSQL ended the test's own.
pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]

SEED = 20261123
EXAMPLES = 8  # per operation and generation mode: the whole module stays well under a minute
SESSION_EXAMPLES = 2

CONFORMANCE = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# What refusing schema-invalid input may look like here, beyond schemathesis' defaults: a body
# over MAX_BODY_BYTES is refused before it is read (413).
REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "411", "413", "415", "422"]


# A replay needs a policy of the tenant or a candidate whose rules the category accepts, a webhook a URL
# the outbound guard accepts (public, resolvable), and a verification a checkpoint this deployment
# signed: random data is rarely any of these. Their successes are covered by tests/test_replay.py,
# tests/test_webhooks.py and tests/test_audit_checkpoints.py.
NEEDS_REAL_REFERENCES = {"POST /api/v1/policies/replay/", "POST /api/v1/webhooks/", "POST /api/v1/audit-log/verify/"}
# No API key needed: public keys are public (docs/security.md).
PUBLIC_OPERATIONS = {"GET /api/v1/audit-log/keys/"}


# Known false positives of positive data acceptance: 400s for requests the schema allows that no
# schema can rule out. Each is matched on the field the answer names and its message, so any other
# refusal of valid data still fails.
ANY_OPERATION = {
    # JSON Schema has no way to say "valid Unicode without NUL": lone surrogates and U+0000 are refused
    # everywhere (core/text.py; PostgreSQL cannot store them).
    "*": {NUL_MESSAGE, UNICODE_MESSAGE, "Null characters are not allowed."},  # the last: Django's, in queries
    # A cursor is opaque: base64 is in the schema, which base64 strings the server handed out is not.
    "cursor": {"Invalid cursor."},
    # A date-time with an offset at the edge of the calendar (0001-01-01T00:00:00+01:00) is outside it in UTC.
    "since": {OUT_OF_RANGE_IN_UTC},
    # ...and `until` before `since`: a relation between two parameters, which OpenAPI cannot state.
    "until": {OUT_OF_RANGE_IN_UTC, "Must not be before since."},
}
# Valid in shape, refused because of what they refer to, which the schema cannot know.
REFERENCES = {
    "POST /api/v1/policies/{id}/rollback/": {"version"},  # a version the policy does not have
    "POST /api/v1/policies/replay/": {"policy", "policy_id", "version", "rules", "non_field_errors"},
    "POST /api/v1/webhooks/": {"url"},  # must resolve to a public address (core/outbound.py)
    # Only a checkpoint this deployment signed for this tenant verifies: any other key, signature or tenant.
    "POST /api/v1/audit-log/verify/": {"key_id", "signature", "tenant"},
    # Relations between fields, which OpenAPI cannot state: only agent keys are pinned to agent names; a
    # secret's value is checked as what its name says (a *_BASE_URL is a URL); a score-audit settings
    # change names at least one of its fields.
    "POST /api/v1/api-keys/": {"agents"},
    "PUT /api/v1/secrets/{name}/": {"value"},
    "PUT /api/v1/settings/score-audit/": {"rate"},
}


def _messages(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [m for item in value for m in _messages(item)]
    if isinstance(value, dict):
        if "message" in value:  # a policy file's problem: {index, name, field, message}
            return [value["message"]]
        return [m for item in value.values() for m in _messages(item)]
    return [repr(value)]


def _known_false_positive(label: str, response) -> bool:
    if response.status_code != 400:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    if not isinstance(body, dict) or not body:
        return False
    for field, value in body.items():
        if field in REFERENCES.get(label, ()):
            continue
        allowed = ANY_OPERATION["*"] | ANY_OPERATION.get(field, set())
        if not all(message in allowed for message in _messages(value)):
            return False
    return True


# Schemathesis' positive data acceptance (ST202) with its expected statuses, applied here so that the
# known false positives above can be told apart from a schema that is stricter than the server.
ACCEPTED = {401, 403, 404, 409, 429}


def _accepted(label: str, response) -> None:
    code = response.status_code
    if code < 400 or code in ACCEPTED or _known_false_positive(label, response):
        return
    raise AssertionError(f"{label}: a schema-valid request was refused: [{code}] {response.text[:500]}")


def _load():
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
    schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(expected_statuses=REFUSALS)
    return schema


@pytest.fixture(scope="module")
def api_schema(django_db_blocker):
    # The schema endpoint touches no table; unblocking only lets Django's startup checks run.
    with django_db_blocker.unblock():
        return _load()


# Loaded once at collection for the test ids; the tests use the fixture's copy.
OPERATIONS = sorted(result.ok().label for result in _load().get_all_operations())


def _operation(schema, label: str):
    method, path = label.split(" ", 1)
    return schema[path][method]


@pytest.fixture(autouse=True)
def _one_connection():
    """The WSGI handler closes "old" connections at each request's start and end, which would
    break the test's transaction; Django's own test client turns this off the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def real_ids(api):
    """Objects of the tenant for path parameters: a running run, a policy and a secret."""
    policy = api.post(
        "/api/v1/policies/", {"name": "Fuzzed", "category": "grounding", "rules": {"min_citations": 1}}, format="json"
    ).json()
    run = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()
    api.put("/api/v1/secrets/OPENAI_API_KEY/", {"value": "sk-fuzz"}, format="json")
    return {"/runs/": run["run_id"], "/policies/": policy["id"], "/secrets/": "OPENAI_API_KEY"}


def _path_parameters(operation, real_ids) -> dict:
    for prefix, value in real_ids.items():
        if f"/api/v1{prefix}{{" in operation.path:
            return {operation.path.split("{")[1].split("}")[0]: value}
    return {}


def _strategy(operation, mode, fixed: dict):
    random = operation.as_strategy(generation_mode=mode)
    if not fixed:
        return random
    return st.one_of(random, operation.as_strategy(generation_mode=mode, path_parameters=fixed))


def _fuzz(strategy, max_examples: int, send) -> None:
    @seed(SEED)
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(case=strategy)
    def run(case):
        send(case)

    run()


@pytest.mark.parametrize("label", OPERATIONS)
def test_every_operation_answers_as_the_schema_says_with_an_api_key(api_schema, acme_key, real_ids, label):
    operation = _operation(api_schema, label)
    headers = {"Authorization": f"Bearer {acme_key[1]}"}
    statuses = []

    for mode, checks in (
        (GenerationMode.POSITIVE, CONFORMANCE),
        (GenerationMode.NEGATIVE, [*CONFORMANCE, negative_data_rejection]),
    ):

        def send(case, checks=checks, mode=mode):
            # A negative case may leave out the key on purpose ("header: violates required"): it
            # goes without one then, or the key put back would leave only a value that serialises
            # to a valid one (True as "?shadow=true") and a 200 read as accepting invalid input.
            omitted = mode is GenerationMode.NEGATIVE and "Authorization" not in (case.headers or {})
            response = case.call(headers={} if omitted else headers)
            statuses.append(response.status_code)
            case.validate_response(response, checks=checks, headers=headers)
            if mode is GenerationMode.POSITIVE:
                _accepted(label, response)

        try:
            _fuzz(_strategy(operation, mode, _path_parameters(operation, real_ids)), EXAMPLES, send)
        except Unsatisfiable:
            # Nothing to make invalid: no parameter, no body, and no key to leave out (the public keys).
            assert mode is GenerationMode.NEGATIVE and label in PUBLIC_OPERATIONS, label

    assert statuses and max(statuses) < 500
    # Not only refusals: the valid half reaches the view and succeeds at least once. A replay needs a
    # policy of the tenant or a candidate whose rules the category accepts, which random data rarely is;
    # tests/test_replay.py covers its successes.
    assert min(statuses) < 300 or "{" in label or label in NEEDS_REAL_REFERENCES, statuses


def test_a_dashboard_session_is_not_a_key_on_any_operation(api_schema, alice):
    browser = Client()
    browser.force_login(alice)
    cookies = {"sessionid": browser.cookies["sessionid"].value}
    statuses: dict[str, set[int]] = {}

    for label in OPERATIONS:

        def send(case, label=label):
            response = case.call(cookies=cookies)
            statuses.setdefault(label, set()).add(response.status_code)
            case.validate_response(response, checks=CONFORMANCE)

        _fuzz(
            _operation(api_schema, label).as_strategy(generation_mode=GenerationMode.POSITIVE), SESSION_EXAMPLES, send
        )

    assert set(statuses) == set(OPERATIONS)
    assert {
        label: codes for label, codes in statuses.items() if codes != {401} and label not in PUBLIC_OPERATIONS
    } == {}
    assert all(statuses[label] == {200} for label in PUBLIC_OPERATIONS)
