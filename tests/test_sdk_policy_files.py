"""The SDK's policy files (groundrule.policy_files): stable names, key order, errors naming the file
and line. Pure: no server. Needs the SDK of this checkout (`make venv`, or PYTHONPATH=client)."""

from pathlib import Path

import pytest

policy_files = pytest.importorskip("groundrule.policy_files")


def test_file_names_are_slugs_made_unique_and_keep_the_file_a_policy_already_has(tmp_path):
    taken = {"Kept": tmp_path / "my-own-name.yaml"}
    names = ["Strict Research (v2)", "strict research v2", "Ünïcode Ålert", "!!!", "Kept"]
    assert policy_files.file_names(names, taken) == {
        "Strict Research (v2)": "strict-research-v2.yaml",
        "strict research v2": "strict-research-v2-2.yaml",
        "Ünïcode Ålert": "unicode-alert.yaml",
        "!!!": "policy.yaml",
        "Kept": "my-own-name.yaml",
    }


def test_a_pulled_policy_lists_its_keys_and_rules_in_a_stable_order():
    policy = {
        "id": 7,
        "name": "Strict",
        "category": "grounding",
        "rules": {"min_citations": 2, "zeta": 1, "action_on_violation": "block"},
        "effective_rules": {},
        "scope": {"agents": ["a"]},
        "enabled": True,
        "mode": "enforce",
        "description": "",
        "version": 3,
    }
    data = policy_files.file_data(policy, ["action_on_violation", "min_citations"])
    assert list(data) == ["name", "description", "category", "mode", "enabled", "scope", "rules"]
    assert list(data["rules"]) == ["action_on_violation", "min_citations", "zeta"]


@pytest.mark.parametrize(
    "text,problem",
    [
        ("name: A\ncategory: [grounding\n", "{path}:3:1: invalid YAML: expected ',' or ']', but got '<stream end>'"),
        ("- name: A\n", "{path}: must be a mapping of policy fields (name, category, rules, ...)."),
        ("name: A\nname: B\n", "{path}:2: name: given twice."),
        ("name: A\ndescription: 2026-01-01\n", "{path}:2: description: not a string, number, true/false or null."),
    ],
)
def test_a_file_that_cannot_be_sent_names_the_file_and_line(tmp_path, text, problem):
    path = tmp_path / "a.yaml"
    path.write_text(text)
    with pytest.raises(policy_files.PolicyFileError) as caught:
        policy_files.read_directory(tmp_path)
    assert caught.value.problems == [problem.format(path=path)]


def test_a_field_is_located_at_its_line_or_its_nearest_parent(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("name: A\ncategory: grounding\nscope:\n  agents:\n  - x\nrules:\n  min_citations: 2\n")
    policy = policy_files.read_file(path)
    assert policy.where("rules.min_citations") == f"{path}:7"
    assert policy.where("rules.min_grounding_score") == f"{path}:6"
    assert policy.where("scope.agents.0") == f"{path}:5"
    assert policy.where("mode") == str(Path(path))
