"""Policy scopes: which agents a policy applies to. Pure tests, no database."""

import pytest

from policies.categories import RuleValidationError, get_category
from policies.engine import PolicySpec
from policies.scope import applicable_policies, clean_scope, scope_matches

RULES = get_category("grounding").effective_rules({})


def scope_errors(raw) -> dict:
    with pytest.raises(RuleValidationError) as info:
        clean_scope(raw)
    return info.value.errors


# --- clean_scope ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, {}, {"agents": []}])
def test_no_scope_means_every_agent(raw):
    assert clean_scope(raw) == {"agents": []}


def test_the_seed_scope_is_valid():
    assert clean_scope({"agents": ["research-agent"]}) == {"agents": ["research-agent"]}


def test_patterns_are_accepted_and_duplicates_dropped():
    assert clean_scope({"agents": ["research-*", "qa-bot", "research-*"]}) == {"agents": ["research-*", "qa-bot"]}


def test_a_hundred_agents_are_allowed():
    agents = [f"agent-{i}" for i in range(100)]
    assert clean_scope({"agents": agents}) == {"agents": agents}


@pytest.mark.parametrize("raw", [[], "research-agent", ["research-agent"], 3])
def test_scope_must_be_an_object(raw):
    assert scope_errors(raw) == {"scope": ['Must be an object like {"agents": [...]}.']}


def test_scope_only_knows_agents():
    assert scope_errors({"agents": [], "tools": ["x"]}) == {"scope": ["Unknown key: tools."]}


@pytest.mark.parametrize("agents", ["research-agent", None, {"name": "a"}, 5])
def test_agents_must_be_a_list(agents):
    assert scope_errors({"agents": agents}) == {"scope.agents": ["Must be a list of agent names."]}


def test_at_most_a_hundred_agents():
    agents = [f"agent-{i}" for i in range(101)]
    assert scope_errors({"agents": agents}) == {"scope.agents": ["Must list at most 100 agent names."]}


def test_each_bad_agent_name_is_reported_by_position():
    message = "Must be a non-empty string of at most 200 characters."
    errors = scope_errors({"agents": ["ok", "", 7, "   ", "x" * 201, "nul\x00", "x" * 200]})
    assert errors == {
        "scope.agents": [
            f"Item 2: {message}",
            f"Item 3: {message}",
            f"Item 4: {message}",
            f"Item 5: {message}",
            "Item 6: Must not contain null characters.",
        ]
    }


# --- scope_matches -------------------------------------------------------------------------

MATCHES = [
    # (agents, agent_name, matches)
    ((), "anyone", True),
    (("research-agent",), "research-agent", True),
    (("research-agent",), "research-agent-2", False),
    (("research-agent",), "Research-Agent", False),
    (("research-*",), "research-agent", True),
    (("research-*",), "research-", True),
    (("research-*",), "qa-research-agent", False),
    (("*-bot",), "support-bot", True),
    (("agent-?",), "agent-7", True),
    (("agent-?",), "agent-17", False),
    (("agent-[12]",), "agent-2", True),
    (("agent-[12]",), "agent-3", False),
    (("agent[1]",), "agent[1]", True),  # an entry always matches its own literal name
    (("qa-bot", "research-*"), "research-x", True),
    (("qa-bot", "research-*"), "qa-bot", True),
    (("qa-bot", "research-*"), "writer", False),
    (("*",), "", True),
]


@pytest.mark.parametrize("agents, agent_name, matches", MATCHES)
def test_scope_matches_exact_names_and_shell_patterns(agents, agent_name, matches):
    assert scope_matches(agents, agent_name) is matches


def test_scope_matches_accepts_a_list_too():
    assert scope_matches(["research-*"], "research-agent")


# --- applicable_policies -------------------------------------------------------------------


def spec(policy_id, *agents):
    return PolicySpec(policy_id, f"P{policy_id}", "grounding", 1, RULES, tuple(agents))


def test_applicable_policies_keep_policy_order():
    policies = [
        spec(1),
        spec(2, "qa-bot"),
        spec(3, "research-*"),
        spec(4, "research-agent"),
        spec(5, "writer", "research-agent"),
    ]
    assert [p.id for p in applicable_policies(policies, "research-agent")] == [1, 3, 4, 5]
    assert [p.id for p in applicable_policies(policies, "qa-bot")] == [1, 2]
    assert [p.id for p in applicable_policies(policies, "nobody")] == [1]


def test_applicable_policies_of_nothing():
    assert applicable_policies([], "research-agent") == []
