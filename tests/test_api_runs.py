"""Runs over the API as an agent drives them: start, report grounding, record spans, complete.

Decisions have the shape of design.md; grounding accumulates over calls (docs/grounding-policies.md); every
evaluation is stored with the version of the policy that made it.
"""

from datetime import timedelta

import pytest
from api_support import (
    LENIENT,
    STRICT,
    all_pages,
    complete,
    create_policy,
    ground,
    post_json,
    start_run,
)
from django.utils import timezone
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from governance.models import Decision, Evaluation, GroundingReport, Run
from governance.selectors.run_list import SORT_VALUES, SORTS
from governance.services import FAILED_RUN_REASON
from tenants import services as tenant_services
from tenants.audit import Actor

pytestmark = pytest.mark.django_db

DECISION_KEYS = {"action", "phase", "reason", "evaluations"}
EVALUATION_KEYS = {"policy_id", "policy_name", "category", "phase", "action", "reason", "metadata"}
ABSTAIN = STRICT["abstention_response"]


def _evaluations(run_id: int, **filters) -> list[Evaluation]:
    with scopes_disabled():
        return list(Evaluation.objects.filter(run_id=run_id, **filters).order_by("id"))


# --- Start ---------------------------------------------------------------------------------


def test_starting_a_run_answers_with_its_id_status_and_decision(api):
    policy = create_policy(api, rules=STRICT)

    response = post_json(
        api,
        "/api/v1/runs/",
        {
            "agent_name": "research-agent",
            "workflow_name": "answer",
            "input": {"question": "What is the policy rate?"},
            "metadata": {"team": "research"},
        },
    )

    assert response.status_code == 201
    body = response.json()
    # `run_id`, as reporting and completing answer; `id` is its deprecated alias for one release.
    assert set(body) == {"run_id", "id", "status", "decision"}
    assert body["id"] == body["run_id"]
    assert body["status"] == "running"
    assert body["decision"] == {
        "action": "allow",
        "phase": "before_workflow",
        "reason": "Grounding rules stored",
        "evaluations": [
            {
                "policy_id": policy["id"],
                "policy_name": "Strict Research Grounding",
                "category": "grounding",
                "phase": "before_workflow",
                "action": "allow",
                "reason": "Grounding rules stored",
                "metadata": {"rules": policy["effective_rules"]},
            }
        ],
        # docs/grounding-context.md: the context rules ride along; this policy leaves them at their defaults.
        "grounding_context": {
            "policy_id": None,
            "policy_name": None,
            "rules": {
                "context_mode": "hybrid",
                "canonical_when_available": "augment_chunks",
                "include_retrieved_text": None,
                "max_context_chars": None,
            },
        },
    }
    detail = api.get(f"/api/v1/runs/{body['id']}/?expand=all").json()
    assert (detail["workflow_name"], detail["input"], detail["metadata"]) == (
        "answer",
        {"question": "What is the policy rate?"},
        {"team": "research"},
    )


def test_a_run_no_policy_governs_is_allowed(api):
    create_policy(api, agents=["billing-agent"])

    body = post_json(api, "/api/v1/runs/", {"agent_name": "research-agent"}).json()

    assert body["decision"] == {
        "action": "allow",
        "phase": "before_workflow",
        "reason": "No applicable policies",
        "evaluations": [],
        "grounding_context": {
            "policy_id": None,
            "policy_name": None,
            "rules": {
                "context_mode": "hybrid",
                "canonical_when_available": "augment_chunks",
                "include_retrieved_text": None,
                "max_context_chars": None,
            },
        },
    }


# --- mid_execution -------------------------------------------------------------------------


def test_a_low_score_blocks_with_the_seed_reason_and_metadata(api):
    policy = create_policy(api, rules=STRICT)
    run_id = start_run(api)

    response = ground(api, run_id, grounding_scores=[0.9, 0.42], citations=["Federal Reserve Report"])

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"run_id", "status", "decision"}
    assert body["run_id"] == run_id
    assert body["status"] == "blocked"
    assert body["decision"] == {
        "action": "block",
        "phase": "mid_execution",
        "reason": "Grounding score (0.42) below threshold (0.8)",
        "abstention_response": ABSTAIN,
        "evaluations": [
            {
                "policy_id": policy["id"],
                "policy_name": "Strict Research Grounding",
                "category": "grounding",
                "phase": "mid_execution",
                "action": "block",
                "reason": "Grounding score (0.42) below threshold (0.8)",
                "metadata": {"score": 0.42, "threshold": 0.8},
            }
        ],
    }


def test_a_warning_has_no_abstention_response(api):
    create_policy(api, rules={**STRICT, "action_on_violation": "warn"})
    run_id = start_run(api)

    body = ground(api, run_id, grounding_scores=[0.5]).json()

    assert body["status"] == "running"
    assert set(body["decision"]) == DECISION_KEYS
    assert body["decision"]["action"] == "warn"
    assert all(set(e) == EVALUATION_KEYS for e in body["decision"]["evaluations"])


def test_passing_scores_are_allowed(api):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)

    body = ground(api, run_id, grounding_scores=[0.92, 0.87], citations=["Federal Reserve Report"]).json()

    assert body["status"] == "running"
    assert body["decision"]["action"] == "allow"
    assert body["decision"]["evaluations"][0]["metadata"] == {"checked": 2, "threshold": 0.8}


def test_a_report_without_scores_has_nothing_to_check(api):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)

    decision = ground(api, run_id, citations=["IMF Analysis"]).json()["decision"]

    assert decision["action"] == "allow"
    assert decision["evaluations"][0]["reason"] == "No grounding scores to check"


def test_mid_execution_checks_only_the_scores_of_that_call(api):
    create_policy(api, rules={**STRICT, "action_on_violation": "warn"})
    run_id = start_run(api)

    first = ground(api, run_id, grounding_scores=[0.3]).json()["decision"]
    second = ground(api, run_id, grounding_scores=[0.95, 0.9]).json()["decision"]

    assert first["action"] == "warn"
    assert second["action"] == "allow"
    assert second["evaluations"][0]["metadata"]["checked"] == 2


def test_block_beats_warn_and_the_reason_comes_from_the_blockers(api):
    warn = create_policy(api, name="Lenient", rules={**LENIENT, "min_grounding_score": 0.9})
    block = create_policy(api, name="Strict", rules=STRICT)
    run_id = start_run(api)

    decision = ground(api, run_id, grounding_scores=[0.7]).json()["decision"]

    assert decision["action"] == "block"
    assert decision["reason"] == "Grounding score (0.7) below threshold (0.8)"
    assert [(e["policy_id"], e["action"]) for e in decision["evaluations"]] == [
        (warn["id"], "warn"),
        (block["id"], "block"),
    ]


def test_two_blocking_policies_join_their_reasons_in_policy_order(api):
    create_policy(api, name="A", rules={**STRICT, "min_grounding_score": 0.9})
    create_policy(api, name="B", rules=STRICT)
    run_id = start_run(api)

    decision = ground(api, run_id, grounding_scores=[0.5]).json()["decision"]

    assert decision["reason"] == (
        "Grounding score (0.5) below threshold (0.9); Grounding score (0.5) below threshold (0.8)"
    )


# --- after_workflow and accumulation --------------------------------------------------------


def test_after_workflow_counts_the_citations_of_every_call(api):
    create_policy(api, rules={**STRICT, "min_citations": 4})
    run_id = start_run(api)
    ground(
        api,
        run_id,
        grounding_scores=[0.92, 0.87],
        citations=["Federal Reserve Report", "IMF Analysis"],
        output_confidence=0.89,
    )
    ground(
        api,
        run_id,
        grounding_scores=[0.85, 0.91],
        citations=["SEC Filing 2023", "Legal Review"],
        output_confidence=0.88,
    )

    body = complete(api, run_id, output="Rates rose.").json()

    assert body["status"] == "completed"
    assert body["decision"]["action"] == "allow"
    assert body["decision"]["reason"] == "Grounding audit passed (4 citations)"
    assert body["decision"]["evaluations"][0]["metadata"] == {"citation_count": 4}
    detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert detail["citations"] == ["Federal Reserve Report", "IMF Analysis", "SEC Filing 2023", "Legal Review"]
    assert detail["report_count"] == 2


def test_after_workflow_blocks_without_citations_with_both_seed_reasons(api):
    create_policy(api, rules={**STRICT, "min_citations": 1})
    run_id = start_run(api)

    body = complete(api, run_id, output="An answer").json()

    assert body["status"] == "blocked"
    assert body["decision"] == {
        "action": "block",
        "phase": "after_workflow",
        "reason": "Citations (0) below minimum (1); No source citations provided (grounding required)",
        "abstention_response": ABSTAIN,
        "evaluations": [
            {
                **body["decision"]["evaluations"][0],
                "metadata": {
                    "warnings": [
                        "Citations (0) below minimum (1)",
                        "No source citations provided (grounding required)",
                    ],
                    "citation_count": 0,
                },
            }
        ],
    }


def test_unsupported_claims_accumulate_over_calls(api):
    create_policy(api, rules={"max_unsupported_claims": 1, "min_citations": 0, "action_on_violation": "block"})
    run_id = start_run(api)
    ground(api, run_id, unsupported_claims=["Rates will fall in May"])
    ground(api, run_id, unsupported_claims=["Inflation is 9%"])

    decision = complete(api, run_id).json()["decision"]

    assert decision["reason"] == "Unsupported claims (2) exceeds max (1)"


@pytest.mark.parametrize(
    "confidences, action",
    [
        ([0.3, 0.9], "allow"),  # the latest confidence counts, not the lowest
        ([0.9, 0.3], "block"),
        ([0.3, None], "block"),  # a report without a confidence keeps the last one reported
        ([None, None], "allow"),  # no confidence at all: the abstention check is skipped (seed gotcha)
    ],
)
def test_after_workflow_uses_the_latest_output_confidence(api, confidences, action):
    create_policy(
        api,
        rules={
            "abstention_threshold": 0.5,
            "min_citations": 0,
            "action_on_violation": "block",
            "abstention_response": ABSTAIN,
        },
    )
    run_id = start_run(api)
    for confidence in confidences:
        body = {"citations": ["IMF Analysis"]}
        if confidence is not None:
            body["output_confidence"] = confidence
        ground(api, run_id, **body)

    decision = complete(api, run_id).json()["decision"]

    assert decision["action"] == action
    if action == "block":
        assert decision["reason"] == "Output confidence (0.3) below abstention threshold (0.5)"
        assert decision["abstention_response"] == ABSTAIN
    else:
        assert "abstention_response" not in decision


# --- Status ----------------------------------------------------------------------------------


def test_a_clean_run_completes(api):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.9], citations=["a", "b"], output_confidence=0.9)

    body = complete(api, run_id, result={"answer": "42"}, output="42").json()

    assert body["status"] == "completed"
    detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert (detail["status"], detail["final_action"], detail["result"], detail["output"]) == (
        "completed",
        "allow",
        {"answer": "42"},
        "42",
    )
    assert detail["ended_at"] is not None and detail["duration_ms"] >= 0


def test_a_warned_run_still_completes(api):
    create_policy(api, rules=LENIENT)
    run_id = start_run(api)

    body = complete(api, run_id).json()

    assert (body["status"], body["decision"]["action"]) == ("completed", "warn")
    assert api.get(f"/api/v1/runs/{run_id}/").json()["final_action"] == "warn"


def test_a_run_blocked_mid_execution_stays_blocked_after_completing(api):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)
    assert ground(api, run_id, grounding_scores=[0.1]).json()["status"] == "blocked"
    assert api.get(f"/api/v1/runs/{run_id}/").json()["status"] == "blocked"

    body = complete(api, run_id).json()

    assert body["status"] == "blocked"
    assert api.get(f"/api/v1/runs/{run_id}/").json()["final_action"] == "block"


def test_an_error_fails_the_run_and_skips_the_audit(api):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)

    body = complete(api, run_id, error="TimeoutError: retrieval took too long").json()

    assert body["status"] == "failed"
    assert body["decision"] == {
        "action": "allow",
        "phase": "after_workflow",
        "reason": FAILED_RUN_REASON,
        "evaluations": [],
    }
    assert api.get(f"/api/v1/runs/{run_id}/").json()["error"] == "TimeoutError: retrieval took too long"


def test_an_empty_or_null_error_is_not_a_failure(api):
    run_a, run_b = start_run(api), start_run(api)

    assert complete(api, run_a, error="").json()["status"] == "completed"
    assert complete(api, run_b, error=None).json()["status"] == "completed"


def test_completing_twice_is_a_conflict(api):
    run_id = start_run(api)
    complete(api, run_id)
    with scopes_disabled():
        decisions = Decision.objects.count()

    response = complete(api, run_id, error="again")

    assert response.status_code == 409
    assert "completes once" in response.json()["detail"]
    assert api.get(f"/api/v1/runs/{run_id}/").json()["status"] == "completed"
    with scopes_disabled():
        assert Decision.objects.count() == decisions


def test_grounding_after_completion_is_a_conflict(api):
    run_id = start_run(api)
    complete(api, run_id)
    with scopes_disabled():
        reports = GroundingReport.objects.count()

    response = ground(api, run_id, grounding_scores=[0.9])

    assert response.status_code == 409
    with scopes_disabled():
        assert GroundingReport.objects.count() == reports
        assert Run.objects.get(pk=run_id).report_count == 0


# --- What is stored --------------------------------------------------------------------------


def test_each_grounding_call_stores_a_report_a_decision_and_its_evaluations(api):
    create_policy(api, name="Strict", rules=STRICT)
    create_policy(api, name="Lenient", rules=LENIENT)
    create_policy(api, name="Other agent", rules=STRICT, agents=["billing-agent"])
    run_id = start_run(api)

    ground(api, run_id, grounding_scores=[0.75], citations=["a"], output="draft", sources=[{"id": "s1", "text": "t"}])
    ground(api, run_id, grounding_scores=[0.95], citations=["b"])

    with scopes_disabled():
        reports = list(GroundingReport.objects.filter(run_id=run_id).order_by("seq"))
        decisions = list(Decision.objects.filter(run_id=run_id).order_by("id"))
    assert [(r.seq, r.grounding_scores, r.citations) for r in reports] == [(1, [0.75], ["a"]), (2, [0.95], ["b"])]
    assert reports[0].sources == [{"id": "s1", "text": "t", "score": None}]
    assert [(d.phase, d.action) for d in decisions] == [
        ("before_workflow", "allow"),
        ("mid_execution", "block"),
        ("mid_execution", "allow"),
    ]
    assert decisions[1].report_id == reports[0].pk
    mid = _evaluations(run_id, phase="mid_execution")
    assert [(e.policy_name, e.action, e.decision_id) for e in mid] == [
        ("Strict", "block", decisions[1].pk),
        ("Lenient", "allow", decisions[1].pk),
        ("Strict", "allow", decisions[2].pk),
        ("Lenient", "allow", decisions[2].pk),
    ]
    assert {e.agent_name for e in mid} == {"research-agent"}


def test_evaluations_record_the_policy_version_they_used(api):
    policy = create_policy(api, rules=STRICT)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.5])
    api.patch(f"/api/v1/policies/{policy['id']}/", {"rules": {**STRICT, "min_grounding_score": 0.4}}, format="json")

    ground(api, run_id, grounding_scores=[0.5])

    mid = _evaluations(run_id, phase="mid_execution")
    assert [(e.policy_version, e.action) for e in mid] == [(1, "block"), (2, "allow")]
    listed = api.get(f"/api/v1/evaluations/?run={run_id}&phase=mid_execution").json()["results"]
    assert sorted(e["policy_version"] for e in listed) == [1, 2]


def test_run_detail_shows_reports_spans_and_evaluations_in_order(api):
    create_policy(api, rules=STRICT)
    run_id = start_run(api)
    span = post_json(
        api,
        f"/api/v1/runs/{run_id}/spans/",
        {
            "kind": "tool",
            "name": "source_retrieval",
            "input": {"q": "rates"},
            "output": {"found": 3},
            "started_at": "2026-01-01T10:00:00Z",
            "ended_at": "2026-01-01T10:00:01Z",
            "attributes": {"k": 3},
        },
    )
    ground(api, run_id, grounding_scores=[0.9], citations=["a", "b"])
    complete(api, run_id, output="done")

    assert span.status_code == 201
    assert span.json()["name"] == "source_retrieval"
    detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert [s["name"] for s in detail["spans"]] == ["source_retrieval"]
    assert detail["spans"][0]["output"] == {"found": 3}
    assert [r["seq"] for r in detail["reports"]] == [1]
    assert [e["phase"] for e in detail["evaluations"]] == ["before_workflow", "mid_execution", "after_workflow"]
    assert detail["unsupported_claims"] == [] and detail["output_confidence"] is None


@pytest.mark.parametrize("kind", ["tool", "llm", "retrieval"])
def test_every_span_kind_is_recorded(api, kind):
    run_id = start_run(api)

    response = post_json(api, f"/api/v1/runs/{run_id}/spans/", {"kind": kind, "name": f"a {kind}"})

    assert response.status_code == 201
    assert response.json()["kind"] == kind


def test_runs_list_is_newest_first_and_filters_by_agent_and_status(api):
    first = start_run(api, agent_name="research-agent")
    second = start_run(api, agent_name="billing-agent")
    complete(api, second)

    everything = api.get("/api/v1/runs/").json()["results"]
    research = api.get("/api/v1/runs/?agent=research-agent").json()["results"]
    completed = api.get("/api/v1/runs/?status=completed").json()["results"]

    assert [r["id"] for r in everything] == [second, first]
    assert [r["id"] for r in research] == [first]
    assert [r["id"] for r in completed] == [second]


# --- Evaluations list ------------------------------------------------------------------------


@pytest.fixture
def history(api):
    """Two agents, two policies, runs that allowed, warned and blocked."""
    strict = create_policy(api, name="Strict", rules=STRICT, agents=["research-*"])
    lenient = create_policy(api, name="Lenient", rules=LENIENT, agents=[])
    research = start_run(api, agent_name="research-agent")
    ground(api, research, grounding_scores=[0.5])  # strict blocks, lenient warns
    billing = start_run(api, agent_name="billing-agent")
    ground(api, billing, grounding_scores=[0.9], citations=["x"])  # lenient allows
    complete(api, billing)  # lenient allows
    return {"strict": strict["id"], "lenient": lenient["id"], "research": research, "billing": billing}


def _listed(api, query: str) -> list[dict]:
    return all_pages(api, f"/api/v1/evaluations/?{query}")


def test_evaluations_filter_by_action(api, history):
    assert {(e["policy_name"], e["action"]) for e in _listed(api, "action=block")} == {("Strict", "block")}
    assert {e["action"] for e in _listed(api, "action=warn&action=block")} == {"warn", "block"}


def test_evaluations_filter_by_phase_agent_and_policy(api, history):
    assert {e["phase"] for e in _listed(api, "phase=after_workflow")} == {"after_workflow"}
    assert {e["run_id"] for e in _listed(api, "agent=billing-agent")} == {history["billing"]}
    assert {e["policy_id"] for e in _listed(api, f"policy={history['strict']}")} == {history["strict"]}
    assert {e["policy_id"] for e in _listed(api, "policy=Lenient")} == {history["lenient"]}
    assert _listed(api, "agent=nobody") == []


def test_evaluations_filter_by_time(api, history):
    with scopes_disabled():
        oldest = Evaluation.objects.order_by("id").first()
        Evaluation.objects.filter(pk=oldest.pk).update(created_at=timezone.now() - timedelta(days=3))
    cutoff = (timezone.now() - timedelta(days=1)).isoformat()

    old = _listed(api, f"until={cutoff.replace('+', '%2B')}")
    recent = _listed(api, f"since={cutoff.replace('+', '%2B')}")

    assert [e["id"] for e in old] == [oldest.pk]
    assert oldest.pk not in {e["id"] for e in recent}
    assert len(old) + len(recent) == len(_listed(api, ""))


def test_evaluations_are_cursor_paginated_without_gaps_or_repeats(api, history):
    with scopes_disabled():
        expected = list(Evaluation.objects.order_by("-id").values_list("id", flat=True))

    first = api.get("/api/v1/evaluations/?page_size=2").json()
    pages = all_pages(api, "/api/v1/evaluations/?page_size=2")

    assert set(first) == {"next", "previous", "results"}
    assert len(first["results"]) == 2 and "cursor=" in first["next"]
    assert [e["id"] for e in pages] == expected


# --- Sorting the runs list ---------------------------------------------------------------------


def _sortable_runs(tenant, count=23) -> list[Run]:
    """Runs with many ties in every sortable column, started in id order (some at the same moment)."""
    start = timezone.now() - timedelta(days=1)
    runs = []
    with scopes_disabled():
        for i in range(count):
            started = start + timedelta(minutes=i // 3)
            runs.append(
                Run.objects.create(
                    tenant=tenant,
                    agent_name=("alpha", "beta", "gamma")[i % 3],
                    workflow_name=("", "ingest")[i % 2],
                    final_action=("allow", "warn", "block", "allow")[i % 4],
                    started_at=started,
                    ended_at=None if i % 5 == 0 else started + timedelta(seconds=(i % 3) + 1),
                    report_count=i % 3,
                    worst_score=None if i % 4 == 0 else (0.5, 0.9)[i % 2],
                    judge_cost=(0.0, 0.01)[i % 2],
                )
            )
    return runs


def _expected(runs: list[Run], value: str) -> list[int]:
    """The order the sort promises, computed here from the rows: ties by id, empty values last, newest first."""
    descending = value.startswith("-")
    sort = SORTS[value.removeprefix("-")]
    newest = sorted(runs, key=lambda r: -r.pk)
    if value == "-started":
        return [r.pk for r in newest]
    if sort.ranked:
        ranks = sort.ranked[::-1] if descending else sort.ranked
        return [r.pk for rank in ranks for r in newest if r.final_action == rank]
    present = [r for r in runs if getattr(r, sort.column) is not None]
    ordered = sorted(present, key=lambda r: (getattr(r, sort.column), r.pk), reverse=descending)
    return [r.pk for r in ordered] + [r.pk for r in newest if getattr(r, sort.column) is None]


def test_the_sorts_are_the_dashboards(api):
    assert set(SORT_VALUES) == {
        *"action score reports duration cost agent workflow started".split(),
        *"-action -score -reports -duration -cost -agent -workflow -started".split(),
    }


@pytest.mark.parametrize("value", SORT_VALUES)
def test_every_sort_orders_the_runs_across_pages_without_gaps_or_repeats(api, acme, globex, value):
    runs = _sortable_runs(acme)
    _sortable_runs(globex, count=5)  # another tenant's, with the same values: never listed
    with scopes_disabled():
        runs = list(Run.objects.filter(tenant=acme))  # duration_ms as stored
    listed = all_pages(api, f"/api/v1/runs/?sort={value}&page_size=4")
    assert [r["id"] for r in listed] == _expected(runs, value)
    first = api.get(f"/api/v1/runs/?sort={value}&page_size=4").json()
    assert first["previous"] is None and f"sort={value.replace('+', '%2B')}" in first["next"]


def test_a_sort_keeps_the_filters_and_pages_by_the_same_rule(api, acme):
    runs = _sortable_runs(acme)
    listed = all_pages(api, "/api/v1/runs/?sort=-score&agent=beta&page_size=2")
    with scopes_disabled():
        betas = list(Run.objects.filter(tenant=acme, agent_name="beta"))
    assert [r["id"] for r in listed] == _expected(betas, "-score")
    assert len(listed) == sum(1 for r in runs if r.agent_name == "beta")
    assert api.get("/api/v1/runs/?sort=score&page_size=0").status_code == 400


@pytest.mark.parametrize("value", ["size", "-", "--score", "Score", "started_at", ""])
def test_an_unknown_sort_is_a_400_naming_sort(api, acme, value):
    _sortable_runs(acme, count=2)
    response = api.get("/api/v1/runs/", {"sort": value})
    assert response.status_code == 400
    problem = response.json()["sort"][0]
    assert problem == "Must not be empty." if value == "" else "-duration" in problem and "agent" in problem


def test_a_tampered_or_foreign_sort_cursor_is_a_400(api, acme):
    _sortable_runs(acme)
    by_score = api.get("/api/v1/runs/?sort=score&page_size=3").json()["next"]
    cursor = by_score.split("cursor=")[1].split("&")[0]
    assert api.get(f"/api/v1/runs/?sort=score&page_size=3&cursor={cursor}").status_code == 200
    # The score cursor holds a number: as the cursor of a sort by agent name it is not one.
    response = api.get(f"/api/v1/runs/?sort=agent&page_size=3&cursor={cursor}")
    assert response.status_code == 400 and response.json() == {"cursor": ["Invalid cursor."]}
    for bad in ("AAAA", "W1siYSJdXQ==", "WzAsInRleHQiLDVd"):  # not JSON, not a key, text for a number
        response = api.get(f"/api/v1/runs/?sort=reports&cursor={bad}")
        assert response.status_code == 400 and response.json() == {"cursor": ["Invalid cursor."]}
    assert api.get("/api/v1/runs/?sort=started&cursor=WzAsIjIwMjYtMTMtNDVUMDA6MDA6MDArMDA6MDAiLDVd").status_code == 400


def test_an_agent_key_sorts_only_its_own_runs(acme):
    _sortable_runs(acme, count=4)  # started by no key of this agent
    _, raw = tenant_services.api_key_create(tenant=acme, name="agent", actor=Actor.system("tests"), scope="agent")
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    own = [start_run(agent, agent_name="zeta") for _ in range(3)]
    listed = all_pages(agent, "/api/v1/runs/?sort=agent&page_size=2")
    assert [r["id"] for r in listed] == sorted(own)
