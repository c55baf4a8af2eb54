"""Replay (issue 11 item 2): a candidate policy re-evaluated on stored reports with the same engine."""

from datetime import timedelta

import pytest
from api_support import LENIENT, STRICT, complete, create_policy, ground, post_json, post_raw, start_run
from django.utils import timezone
from django_scopes import scopes_disabled

from governance.models import Decision, ReplayJob, Run

pytestmark = pytest.mark.django_db
URL = "/api/v1/policies/replay/"

REPORTS = [
    {"grounding_scores": [0.9, 0.85], "citations": ["a", "b"], "output_confidence": 0.9},
    {"grounding_scores": [0.7], "citations": ["a"], "unsupported_claims": ["x"]},
    {"grounding_scores": [0.5], "output_confidence": 0.3},
]


@pytest.fixture
def history(api):
    lenient = create_policy(api, name="Lenient", rules=LENIENT, agents=[])
    runs = []
    for n, report in enumerate(REPORTS):
        run = start_run(api, agent_name=f"agent-{n % 2}")
        ground(api, run, **report)
        ground(api, run, grounding_scores=[0.95], citations=["c"])
        complete(api, run, output=f"Answer {n}")
        runs.append(run)
    running = start_run(api, agent_name="agent-0")
    ground(api, running, grounding_scores=[0.2])
    runs.append(running)
    return lenient, runs


def _stored_counts(runs):
    counts = {"allow": 0, "warn": 0, "block": 0}
    with scopes_disabled():
        for d in Decision.objects.filter(run_id__in=runs):
            counts[d.action] += 1
    return counts


def test_replaying_the_current_version_reproduces_what_was_decided(api, history):
    lenient, runs = history
    body = post_json(api, URL, {"policy_id": lenient["id"], "version": 1}).json()
    assert body["reports"] == 7 and body["runs"] == 4
    assert body["before"] == body["after"] == _stored_counts(runs)
    assert body["changed_runs"] == 0 and body["changed"] == []
    assert isinstance(body["elapsed_ms"], int)


def test_a_strict_candidate_added_changes_decisions(api, history):
    _, runs = history
    body = post_json(api, URL, {"policy": {"category": "grounding", "rules": STRICT}}).json()
    assert body["before"] == _stored_counts(runs)
    assert body["after"]["block"] > body["before"]["block"]
    assert body["changed_runs"] >= 3
    first = body["changed"][0]
    assert set(first) == {"run_id", "phase", "before", "after", "reason"}
    assert first["after"] == "block" and first["run_id"] in runs
    assert sum(body["before"].values()) == sum(body["after"].values())


def test_a_candidate_in_place_of_a_policy(api, history):
    lenient, _ = history
    in_place = post_json(
        api,
        URL,
        {
            "policy_id": lenient["id"],
            "policy": {"category": "grounding", "rules": {**LENIENT, "min_grounding_score": 0.4}},
        },
    )
    assert in_place.status_code == 200
    assert (in_place.json()["before"]["warn"], in_place.json()["after"]["warn"]) == (2, 1)  # 0.5 now passes


def test_agents_and_the_window_narrow_the_replay(api, history):
    _, runs = history
    only = post_json(api, URL, {"policy": {"category": "grounding", "rules": STRICT}, "agents": ["agent-1"]}).json()
    assert only["runs"] == 1
    future = (timezone.now() + timedelta(days=1)).isoformat()
    empty = post_json(
        api,
        URL,
        {
            "policy": {"category": "grounding"},
            "since": future,
            "until": (timezone.now() + timedelta(days=2)).isoformat(),
        },
    ).json()
    assert (empty["runs"], empty["reports"]) == (0, 0)
    with scopes_disabled():
        Run.objects.filter(pk=runs[0]).update(started_at=timezone.now() - timedelta(days=8))
    assert post_json(api, URL, {"policy": {"category": "grounding"}}).json()["runs"] == 3  # default: 7 days


def test_shadow_policies_are_left_out_of_before(api, history):
    create_policy(api, name="Shadowed", rules=STRICT, agents=[], mode="shadow")
    body = post_json(api, URL, {"policy": {"category": "grounding", "rules": LENIENT}}).json()
    assert body["changed_runs"] == 0  # a second lenient policy changes no action; the shadow one is not enforced


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "policy"),
        ({"policy": "strict"}, "policy"),
        ({"policy": {"category": "nope"}}, "policy"),
        ({"policy": {"category": "grounding", "rules": {"min_grounding_score": 2}}}, "policy"),
        ({"policy": {"category": "grounding", "scope": {"agents": "x"}}}, "policy"),
        ({"policy": {"category": "grounding"}, "since": "yesterday"}, "since"),
        ({"policy": {"category": "grounding"}, "until": 5}, "until"),
        ({"policy": {"category": "grounding"}, "until": "2026-01-01T10:60:00Z"}, "until"),  # no such minute
        (
            {"policy": {"category": "grounding"}, "since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
            "until",
        ),
        ({"policy": {"category": "grounding"}, "agents": "agent-1"}, "agents"),
        ({"policy": {"category": "grounding"}, "window": 3}, "window"),
        ({"policy_id": "one"}, "policy_id"),
        ({"policy": {"category": "grounding"}, "version": 2}, "version"),  # was ignored: a 200 for the body
        # Before year 1 or after 9999 once in UTC: Python overflowed (a 500).
        ({"policy": {"category": "grounding"}, "since": "0001-01-01T00:00:00+05:00"}, "since"),
        ({"policy": {"category": "grounding"}, "until": "9999-12-31T23:59:59-05:00"}, "until"),
        # Text the database refuses, sent to it as the agent filter (a 500).
        ({"policy": {"category": "grounding"}, "agents": ["agent\x00-1"]}, "agents"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, body, field):
    response = post_json(api, URL, body)
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_an_agent_name_with_a_lone_surrogate_is_a_400(api):
    raw = '{"policy": {"category": "grounding"}, "agents": ["agent-\\ud800"]}'  # JSON allows the escape
    response = post_raw(api, URL, raw)
    assert response.status_code == 400, response.content
    assert "agents" in response.json()


def test_an_until_in_the_first_week_of_year_one_replays_from_the_start_of_time(api):
    # The default window (7 days before until) used to overflow: a 500.
    response = post_json(api, URL, {"policy": {"category": "grounding"}, "until": "0001-01-02T00:00:00Z"})
    assert response.status_code == 200, response.content
    assert response.json()["runs"] == 0


def test_a_missing_version_is_a_400(api, history):
    lenient, _ = history
    response = post_json(api, URL, {"policy_id": lenient["id"], "version": 9})
    assert response.status_code == 400 and "version" in response.json()


def test_another_tenants_policy_and_runs_stay_out(api, other_api, history):
    lenient, _ = history
    assert post_json(other_api, URL, {"policy_id": lenient["id"], "version": 1}).status_code == 404
    assert (
        post_json(other_api, URL, {"policy_id": lenient["id"], "policy": {"category": "grounding"}}).status_code == 404
    )
    assert post_json(other_api, URL, {"policy": {"category": "grounding", "rules": STRICT}}).json()["runs"] == 0


def test_a_large_window_runs_as_a_task_with_progress(
    api, other_api, history, settings, django_capture_on_commit_callbacks
):
    settings.REPLAY_SYNC_MAX_REPORTS = 2
    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(api, URL, {"policy": {"category": "grounding", "rules": STRICT}})
    assert response.status_code == 202, response.content
    job = response.json()
    assert job["total"] == 7 and job["status_url"].endswith(f"/api/v1/policies/replay/{job['id']}/")
    status = api.get(f"/api/v1/policies/replay/{job['id']}/").json()
    assert status["status"] == "done" and status["done"] == 7
    settings.REPLAY_SYNC_MAX_REPORTS = 100_000
    inline = post_json(api, URL, {"policy": {"category": "grounding", "rules": STRICT}}).json()
    inline.pop("elapsed_ms")
    status["result"].pop("elapsed_ms")
    assert status["result"] == inline
    assert other_api.get(f"/api/v1/policies/replay/{job['id']}/").status_code == 404
    with scopes_disabled():
        assert ReplayJob.objects.count() == 1


def test_replay_is_in_the_schema(api):
    schema = api.get("/api/v1/schema/?format=json").content.decode()
    assert "/api/v1/policies/replay/" in schema and "/api/v1/policies/replay/{id}/" in schema
    assert "judges_reused" in schema and "judges_missing" in schema and "not_calibrated" in schema


# --- the policy editor's "Try on past runs" --------------------------------------------------------


def _form(**overrides):
    from policies.categories import get_category

    data = {"category": "grounding", "name": "Tried", "description": "", "agents": "", "enabled": "on"}
    for s in get_category("grounding").rules:
        if s.type == "boolean":
            if s.default:
                data[f"rule_{s.name}"] = "on"
        else:
            data[f"rule_{s.name}"] = "" if s.default is None else str(s.default)
    data.update(overrides)
    return data


def test_try_on_past_runs_shows_the_comparison(client, alice, history):
    lenient, _ = history
    client.force_login(alice)
    assert "Try on past runs" in client.get(f"/policies/{lenient['id']}/edit/").text
    response = client.post(
        f"/policies/try/?policy={lenient['id']}", _form(name="Lenient", rule_min_grounding_score="0.4")
    )
    assert response.status_code == 200
    page = response.text
    assert '<strong data-testid="changed-runs">1</strong>' in page and "Save in shadow mode" in page
    bad = client.post("/policies/try/", _form(rule_min_grounding_score="7"))
    assert "Fix the fields" in bad.text


def test_try_on_past_runs_is_admin_only_and_tenant_isolated(client, bob, charlie, history):
    lenient, _ = history
    client.force_login(bob)
    assert client.post("/policies/try/", _form()).status_code == 403
    client.force_login(charlie)
    assert client.post(f"/policies/try/?policy={lenient['id']}", _form()).status_code == 404
    page = client.post("/policies/try/", _form()).text
    assert '<strong data-testid="changed-runs">0</strong>' in page and "0 grounding reports" in page


def test_a_job_finished_before_judges_were_replayed_still_answers(api, acme):
    old = {"reports": 1, "runs": 1, "before": {"allow": 1, "warn": 0, "block": 0}}
    old |= {"after": {"allow": 1, "warn": 0, "block": 0}, "changed_runs": 0, "changed": [], "elapsed_ms": 1}
    with scopes_disabled():
        job = ReplayJob.objects.create(
            tenant=acme, params={}, total=1, done=1, status=ReplayJob.Status.DONE, result=old
        )
    body = api.get(f"/api/v1/policies/replay/{job.pk}/").json()
    assert (body["result"]["judges_reused"], body["result"]["judges_missing"]) == (0, 0)
