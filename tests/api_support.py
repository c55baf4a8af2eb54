"""Helpers the API test modules share: the seed's example rules, row counts, and short verbs
for driving a run over HTTP the way an agent does."""

import json

from django_scopes import scopes_disabled

from governance.models import Decision, Evaluation, GroundingReport, Run, RunSource, Span
from policies.models import Policy, PolicyVersion
from tenants.models import ApiKey, AuditEvent, Membership, Tenant, TenantSecret

# docs/grounding-policies.md, "Strict Research Assistant".
STRICT = {
    "require_source_grounding": True,
    "min_grounding_score": 0.8,
    "min_citations": 2,
    "max_unsupported_claims": 0,
    "abstention_threshold": 0.5,
    "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
    "action_on_violation": "block",
}

# docs/grounding-policies.md, "Lenient RAG Agent".
LENIENT = {
    "require_source_grounding": False,
    "min_grounding_score": 0.6,
    "min_citations": 1,
    "max_unsupported_claims": 3,
    "abstention_threshold": None,
    "action_on_violation": "warn",
}

WRITABLE_MODELS = (
    Tenant,
    ApiKey,
    Membership,
    TenantSecret,
    Policy,
    PolicyVersion,
    Run,
    GroundingReport,
    RunSource,
    Span,
    Decision,
    Evaluation,
    AuditEvent,
)


def row_counts() -> dict[str, int]:
    """Rows of every table a request could write, across all tenants."""
    with scopes_disabled():
        return {model.__name__: model.objects.count() for model in WRITABLE_MODELS}


def post_json(client, path: str, body, **extra):
    return client.post(path, body, format="json", **extra)


def post_raw(client, path: str, raw: str | bytes, content_type: str = "application/json", **extra):
    return client.generic("POST", path, raw, content_type=content_type, **extra)


def start_run(client, agent_name: str = "research-agent", **body) -> int:
    response = post_json(client, "/api/v1/runs/", {"agent_name": agent_name, **body})
    assert response.status_code == 201, response.content
    return response.json()["id"]


def ground(client, run_id: int, **body):
    return post_json(client, f"/api/v1/runs/{run_id}/grounding/", body)


def complete(client, run_id: int, **body):
    return post_json(client, f"/api/v1/runs/{run_id}/complete/", body)


def create_policy(
    client, name: str = "Strict Research Grounding", rules: dict | None = None, agents: list[str] | None = None, **extra
) -> dict:
    body = {
        "name": name,
        "category": "grounding",
        "rules": STRICT if rules is None else rules,
        "scope": {"agents": ["research-agent"] if agents is None else agents},
        "enabled": True,
        **extra,
    }
    response = post_json(client, "/api/v1/policies/", body)
    assert response.status_code == 201, response.content
    return response.json()


def all_pages(client, path: str) -> list[dict]:
    """Follows `next` links to the end; the results of every page, in order."""
    results, url = [], path
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        results += body["results"]
        url = body["next"]
    return results


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
