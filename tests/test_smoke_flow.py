import pytest

pytestmark = pytest.mark.django_db

STRICT = {
    "require_source_grounding": True,
    "min_grounding_score": 0.8,
    "min_citations": 2,
    "max_unsupported_claims": 0,
    "abstention_threshold": 0.5,
    "abstention_response": "I don't have sufficient grounded evidence to answer this accurately.",
    "action_on_violation": "block",
}


def test_agent_is_blocked_after_workflow_without_citations(api):
    created = api.post(
        "/api/v1/policies/",
        {
            "name": "Strict Research Grounding",
            "category": "grounding",
            "rules": STRICT,
            "scope": {"agents": ["research-*"]},
            "enabled": True,
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    run = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json")
    assert run.status_code == 201, run.json()
    run_id = run.json()["id"]
    mid = api.post(f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.9, 0.42]}, format="json")
    assert mid.json()["decision"]["reason"] == "Grounding score (0.42) below threshold (0.8)"
    done = api.post(f"/api/v1/runs/{run_id}/complete/", {"output": "x"}, format="json")
    body = done.json()
    assert body["decision"]["action"] == "block"
    assert (
        body["decision"]["reason"]
        == "Citations (0) below minimum (2); No source citations provided (grounding required)"
    )
