"""POST /api/v1/grounding/decide/ and the before_workflow decision's grounding_context (docs/grounding-context.md):
the decision under the agent's policy, which policy that is, bad input and authentication."""

import pytest
from api_support import create_policy, post_json, row_counts

pytestmark = pytest.mark.django_db

DECIDE = "/api/v1/grounding/decide/"
TEXT = "The supply temperature should be between 60-80C..."
DEFAULTS = {
    "context_mode": "hybrid",
    "canonical_when_available": "augment_chunks",
    "include_retrieved_text": None,
    "max_context_chars": None,
}


def decide(client, **body):
    return post_json(client, DECIDE, {"agent_name": "research-agent", **body})


def test_without_a_context_policy_the_seed_defaults_apply(api):
    create_policy(api)  # a grounding policy that leaves the context rules alone

    response = decide(api, retrieved_text=TEXT, prepared_documents=[{"id": "sop-12"}])

    assert response.status_code == 200
    assert response.json() == {
        "retrieved_text_for_prompt": TEXT,
        "include_attachments": True,
        "include_retrieved_text": True,
        "grounding_context": {"policy_id": None, "policy_name": None, "rules": DEFAULTS},
    }


def test_the_agent_policy_decides_and_is_named(api):
    policy = create_policy(api, name="Attachments only", rules={"context_mode": "attachments_only"})

    body = decide(api, retrieved_text=TEXT, prepared_documents=[{"id": "sop-12"}]).json()

    assert (body["retrieved_text_for_prompt"], body["include_attachments"], body["include_retrieved_text"]) == (
        "",
        True,
        False,
    )
    assert body["grounding_context"] == {
        "policy_id": policy["id"],
        "policy_name": "Attachments only",
        "rules": {**DEFAULTS, "context_mode": "attachments_only"},
    }


def test_the_fallback_and_truncation_through_the_api(api):
    create_policy(api, rules={"context_mode": "attachments_only", "max_context_chars": 10})

    body = decide(api, retrieved_text="a" * 11).json()

    assert body["retrieved_text_for_prompt"] == "a" * 10 + "\n... [truncated]"
    assert (body["include_attachments"], body["include_retrieved_text"]) == (True, True)


def test_the_text_is_measured_as_sent_whitespace_included(api):
    create_policy(api, rules={"max_context_chars": 3})

    assert decide(api, retrieved_text="  ab  ").json()["retrieved_text_for_prompt"] == "  a\n... [truncated]"


def test_only_policies_scoped_to_the_agent_count(api):
    create_policy(api, name="Billing", rules={"context_mode": "chunks_only"}, agents=["billing-agent"])
    research = create_policy(api, name="Research", rules={"include_retrieved_text": False}, agents=["research-*"])

    research_body = decide(api, retrieved_text=TEXT).json()
    billing_body = post_json(api, DECIDE, {"agent_name": "billing-agent", "retrieved_text": TEXT}).json()
    other_body = post_json(api, DECIDE, {"agent_name": "support-agent", "retrieved_text": TEXT}).json()

    assert research_body["grounding_context"]["policy_id"] == research["id"]
    assert research_body["retrieved_text_for_prompt"] == ""
    assert billing_body["grounding_context"]["policy_name"] == "Billing"
    assert (billing_body["retrieved_text_for_prompt"], billing_body["include_attachments"]) == (TEXT, False)
    assert other_body["grounding_context"]["policy_id"] is None


def test_the_first_applicable_policy_in_policy_order_wins(api):
    create_policy(api, name="Scores only", rules={"min_grounding_score": 0.8})
    first = create_policy(api, name="First", rules={"context_mode": "chunks_only"})
    create_policy(api, name="Second", rules={"context_mode": "attachments_only"})

    assert decide(api, retrieved_text=TEXT).json()["grounding_context"]["policy_id"] == first["id"]


def test_a_disabled_policy_does_not_decide(api):
    create_policy(api, name="Off", rules={"context_mode": "chunks_only"}, enabled=False)

    assert decide(api, retrieved_text=TEXT).json()["grounding_context"]["policy_id"] is None


def test_a_policy_of_another_tenant_never_decides(api, other_api):
    create_policy(other_api, name="Globex", rules={"context_mode": "chunks_only"})

    assert decide(api, retrieved_text=TEXT).json()["grounding_context"]["policy_id"] is None


def test_a_policy_change_is_seen_at_once(api):
    policy = create_policy(api, rules={"context_mode": "chunks_only"})
    assert decide(api, retrieved_text=TEXT, prepared_documents=["sop"]).json()["include_attachments"] is False

    response = api.patch(
        f"/api/v1/policies/{policy['id']}/",
        {"rules": {"context_mode": "hybrid", "max_context_chars": 4}},
        format="json",
    )
    assert response.status_code == 200, response.content

    body = decide(api, retrieved_text=TEXT, prepared_documents=["sop"]).json()
    assert (body["retrieved_text_for_prompt"], body["include_attachments"]) == ("The \n... [truncated]", True)


def test_missing_inputs_mean_no_text_and_no_documents(api):
    create_policy(api, rules={"context_mode": "attachments_only"})

    body = decide(api).json()
    assert (body["retrieved_text_for_prompt"], body["include_attachments"], body["include_retrieved_text"]) == (
        "",
        True,
        False,
    )
    assert decide(api, retrieved_text=None).status_code == 200


def test_deciding_writes_nothing(api):
    create_policy(api)
    before = row_counts()

    assert decide(api, retrieved_text=TEXT).status_code == 200
    assert row_counts() == before


BAD = [
    ("no agent", {"retrieved_text": TEXT}, "agent_name"),
    ("agent a number", {"agent_name": 7}, "agent_name"),
    ("blank agent", {"agent_name": ""}, "agent_name"),
    ("text a list", {"agent_name": "a", "retrieved_text": ["x"]}, "retrieved_text"),
    ("text with NUL", {"agent_name": "a", "retrieved_text": "a\x00"}, "retrieved_text"),
    ("documents an object", {"agent_name": "a", "prepared_documents": {"id": "x"}}, "prepared_documents"),
    ("document a number", {"agent_name": "a", "prepared_documents": [3]}, "prepared_documents"),
    ("document blank", {"agent_name": "a", "prepared_documents": [" "]}, "prepared_documents"),
    ("too many documents", {"agent_name": "a", "prepared_documents": ["d"] * 1001}, "prepared_documents"),
    ("unknown field", {"agent_name": "a", "policy": {"mode": "hybrid"}}, "policy"),
]


@pytest.mark.parametrize("case, body, field", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_a_400_naming_the_field(api, case, body, field):
    response = post_json(api, DECIDE, body)

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()


def test_not_a_json_object_is_a_400(api):
    response = post_json(api, DECIDE, ["research-agent"])
    assert response.status_code == 400


def test_no_key_is_a_401(acme):
    from rest_framework.test import APIClient

    response = APIClient().post(DECIDE, {"agent_name": "a"}, format="json")
    assert response.status_code == 401


# --- the before_workflow decision carries the same context ------------------------------------------


def test_starting_a_run_returns_the_agent_context_rules(api):
    create_policy(api, name="Strict", rules={"min_citations": 2})
    policy = create_policy(
        api, name="Context", rules={"canonical_when_available": "prefer_attachments", "max_context_chars": 2000}
    )

    decision = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()["decision"]

    assert decision["grounding_context"] == {
        "policy_id": policy["id"],
        "policy_name": "Context",
        "rules": {**DEFAULTS, "canonical_when_available": "prefer_attachments", "max_context_chars": 2000},
    }
    # additive: the rest of the decision keeps its shape
    assert set(decision) == {"action", "phase", "reason", "evaluations", "grounding_context"}
    assert decision["grounding_context"] == decide(api).json()["grounding_context"]
