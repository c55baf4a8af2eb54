"""Tenant isolation: globex's key (charlie's tenant) sees none of acme's rows.

Another tenant's object is a 404, never a 403 that confirms it exists, and nothing is written.
"""

import csv
import io
import json

import pytest
from api_support import (
    STRICT,
    complete,
    create_policy,
    ground,
    post_json,
    row_counts,
    start_run,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme_world(api):
    """Acme's policy, run (with evaluations and a span) and secret."""
    policy = create_policy(api, rules=STRICT)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.5], citations=["Acme internal memo"])
    post_json(api, f"/api/v1/runs/{run_id}/spans/", {"kind": "tool", "name": "acme_search"})
    api.put("/api/v1/secrets/OPENAI_API_KEY/", {"value": "sk-acme-0123456789"}, format="json")
    return {"policy": policy["id"], "run": run_id}


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("get", "/api/v1/policies/{policy}/", None),
        ("put", "/api/v1/policies/{policy}/", {"name": "Taken over", "category": "grounding"}),
        ("patch", "/api/v1/policies/{policy}/", {"enabled": False}),
        ("delete", "/api/v1/policies/{policy}/", None),
        ("get", "/api/v1/runs/{run}/", None),
        ("post", "/api/v1/runs/{run}/grounding/", {"grounding_scores": [0.9], "citations": ["forged"]}),
        ("post", "/api/v1/runs/{run}/spans/", {"kind": "tool", "name": "forged"}),
        ("post", "/api/v1/runs/{run}/complete/", {"output": "forged"}),
        ("delete", "/api/v1/secrets/OPENAI_API_KEY/", None),
    ],
)
def test_another_tenants_object_is_not_found_and_untouched(api, other_api, acme_world, method, path, body):
    def view():
        # What the owner reads there, less the request id every error answer carries.
        body = api.get(path.format(**acme_world)).json()
        return {k: v for k, v in body.items() if k != "request_id"} if isinstance(body, dict) else body

    before = row_counts()
    own_view = view() if method != "delete" or "policies" in path else None

    response = getattr(other_api, method)(path.format(**acme_world), body, format="json")

    assert response.status_code == 404
    assert "detail" in response.json()
    assert row_counts() == before
    if own_view is not None:
        assert view() == own_view


def test_the_outsiders_404_looks_like_a_missing_id(api, other_api, acme_world):
    theirs = other_api.get(f"/api/v1/runs/{acme_world['run']}/", HTTP_X_REQUEST_ID="probe")
    missing = other_api.get("/api/v1/runs/987654321/", HTTP_X_REQUEST_ID="probe")

    assert (theirs.status_code, theirs.json()) == (missing.status_code, missing.json())


def test_another_tenants_run_stays_open_after_the_outsider_tries_to_complete_it(api, other_api, acme_world):
    other_api.post(f"/api/v1/runs/{acme_world['run']}/complete/", {}, format="json")

    assert api.get(f"/api/v1/runs/{acme_world['run']}/").json()["status"] == "blocked"
    assert complete(api, acme_world["run"]).status_code == 200


@pytest.mark.parametrize(
    "path", ["/api/v1/policies/", "/api/v1/runs/", "/api/v1/evaluations/", "/api/v1/audit-log/", "/api/v1/secrets/"]
)
def test_lists_never_include_the_other_tenants_rows(api, other_api, acme_world, path):
    create_policy(other_api, name="Globex policy", agents=[])
    globex_run = start_run(other_api, agent_name="globex-agent")
    ground(other_api, globex_run, grounding_scores=[0.2])
    other_api.put("/api/v1/secrets/GROQ_API_KEY/", {"value": "gsk-globex-0123456789"}, format="json")

    acme_rows = api.get(path).json()["results"]
    globex_rows = other_api.get(path).json()["results"]

    assert acme_rows and globex_rows
    acme_text, globex_text = json.dumps(acme_rows), json.dumps(globex_rows)
    for marker in ("Globex policy", "globex-agent", "GROQ_API_KEY"):
        assert marker not in acme_text
    for marker in ("Strict Research Grounding", "research-agent", "OPENAI_API_KEY", "acme_search"):
        assert marker not in globex_text


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/evaluations/export?format=csv",
        "/api/v1/evaluations/export?format=jsonl",
        "/api/v1/audit-log/export?format=csv",
        "/api/v1/audit-log/export?format=jsonl",
    ],
)
def test_exports_never_include_the_other_tenants_rows(api, other_api, acme_world, path):
    globex_run = start_run(other_api, agent_name="globex-agent")
    ground(other_api, globex_run, grounding_scores=[0.2])

    text = b"".join(other_api.get(path).streaming_content).decode()

    assert "research-agent" not in text and "Strict Research Grounding" not in text
    assert "acme" not in text.lower()


def test_evaluation_filters_cannot_reach_across_tenants(api, other_api, acme_world):
    assert other_api.get(f"/api/v1/evaluations/?run={acme_world['run']}").json()["results"] == []
    assert other_api.get(f"/api/v1/evaluations/?policy={acme_world['policy']}").json()["results"] == []
    assert other_api.get("/api/v1/evaluations/?agent=research-agent").json()["results"] == []


def test_evaluation_export_rows_belong_to_the_key_tenant(api, other_api, acme_world):
    globex_run = start_run(other_api, agent_name="globex-agent")
    ground(other_api, globex_run, grounding_scores=[0.2])

    rows = list(
        csv.DictReader(
            io.StringIO(b"".join(api.get("/api/v1/evaluations/export?format=csv").streaming_content).decode())
        )
    )

    assert rows and {r["run_id"] for r in rows} == {str(acme_world["run"])}


def test_policies_of_one_tenant_never_decide_for_another(api, other_api, acme_world):
    run_id = start_run(other_api, agent_name="research-agent")

    decision = ground(other_api, run_id, grounding_scores=[0.01]).json()["decision"]

    assert decision == {
        "action": "allow",
        "phase": "mid_execution",
        "reason": "No applicable policies",
        "evaluations": [],
    }


def test_the_same_secret_name_in_two_tenants_is_two_secrets(api, other_api, acme_world):
    response = other_api.put("/api/v1/secrets/OPENAI_API_KEY/", {"value": "sk-globex-9876543210"}, format="json")

    assert response.status_code == 201
    assert api.get("/api/v1/secrets/").json()["results"][0]["hint"] == "••••6789"
    assert other_api.get("/api/v1/secrets/").json()["results"][0]["hint"] == "••••3210"
