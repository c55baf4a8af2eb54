"""The read replica: which connection each page and endpoint reads from (core/routing.py).

With DATABASE_REPLICA_URL set (PostgreSQL), the test runner makes "replica" a second connection
to the primary's test database (TEST MIRROR), so every query is captured on the connection that
ran it. These tests commit their rows (transaction=True) so that second connection sees them.
Without the variable the router's rules are still checked, on the one database.
"""

import time

import pytest
from api_support import create_policy, ground, post_json, start_run
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.test.utils import CaptureQueriesContext
from django_scopes import scope
from pages_support import LENIENT, run_through, signed_in, violations_of

from core import routing
from core.routing import REPLICA, ReplicaRouter, replica_configured
from governance.models import Evaluation, ReplayJob, Run
from tenants.models import ApiKey, Membership

needs_replica = pytest.mark.skipif(not replica_configured(), reason="needs DATABASE_REPLICA_URL (PostgreSQL)")
GOVERNANCE_TABLES = (
    "governance_run",
    "governance_evaluation",
    "governance_decision",
    "governance_span",
    "governance_auditevent",
    "governance_groundingreport",
    "governance_agentscoreauditday",
)


class Reads:
    """The SQL each connection ran while the block was open."""

    def __init__(self):
        self.primary = CaptureQueriesContext(connections[DEFAULT_DB_ALIAS])
        self.replica = CaptureQueriesContext(connections[REPLICA])

    def __enter__(self):
        self.primary.__enter__()
        self.replica.__enter__()
        return self

    def __exit__(self, *exc):
        self.replica.__exit__(*exc)
        self.primary.__exit__(*exc)

    @staticmethod
    def _touching(captured, tables) -> list[str]:
        return [q["sql"] for q in captured.captured_queries if any(f'"{t}"' in q["sql"] for t in tables)]

    def governance_on_primary(self) -> list[str]:
        return self._touching(self.primary, GOVERNANCE_TABLES)

    def governance_on_replica(self) -> list[str]:
        return self._touching(self.replica, GOVERNANCE_TABLES)


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


# --- The router's rules, on any database -----------------------------------------------------


def test_without_a_replica_everything_reads_and_writes_the_primary(settings):
    settings.REPLICA_READS = False
    router = ReplicaRouter()
    token = routing._reads.set(REPLICA if replica_configured() else None)
    try:
        if not replica_configured():
            assert router.db_for_read(Run) == DEFAULT_DB_ALIAS
        assert router.db_for_write(Run) == DEFAULT_DB_ALIAS
    finally:
        routing._reads.reset(token)


def test_the_first_write_pins_the_rest_of_the_request_to_the_primary():
    router = ReplicaRouter()
    token = routing._reads.set(REPLICA)
    try:
        assert router.db_for_read(Run) == REPLICA
        assert router.db_for_read(ApiKey) == DEFAULT_DB_ALIAS  # who may do what: always the primary
        assert router.db_for_read(Membership) == DEFAULT_DB_ALIAS
        assert router.db_for_write(Evaluation) == DEFAULT_DB_ALIAS
        assert router.db_for_read(Run) == DEFAULT_DB_ALIAS
    finally:
        routing._reads.reset(token)


@pytest.mark.django_db
def test_reads_inside_a_transaction_stay_on_the_primary():
    router = ReplicaRouter()
    token = routing._reads.set(REPLICA)
    try:
        with transaction.atomic():
            assert router.db_for_read(Run) == DEFAULT_DB_ALIAS
    finally:
        routing._reads.reset(token)


def test_the_replica_is_never_migrated():
    router = ReplicaRouter()
    assert router.allow_migrate(REPLICA, "governance") is False
    assert router.allow_migrate(DEFAULT_DB_ALIAS, "governance") is True


# --- Pages and endpoints, with a replica -------------------------------------------------------


@pytest.fixture
def blocked(acme, make_policy):
    make_policy(rules={**LENIENT, "action_on_violation": "block"})
    run = run_through(acme, scores=(0.3,))
    return run, violations_of(run)[0]


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/runs/",
        "/runs/{run}/",
        "/runs/{run}/?tab=trace",
        "/violations/",
        "/violations/{violation}/",
        "/audit/",
        "/evaluations/export?format=csv",
        "/evaluations/export?format=jsonl",
        "/audit/export?format=csv",
        "/score-audit/",
        "/policies/{policy}/calibration/",
    ],
)
def test_dashboard_pages_read_the_replica(path, alice, blocked):
    run, violation = blocked
    client = signed_in(alice)
    with Reads() as reads:
        response = client.get(path.format(run=run.pk, violation=violation.pk, policy=violation.policy_ref))
        body = _body(response)
    assert response.status_code == 200, body[:300]
    assert reads.governance_on_replica(), "the page read nothing from the replica"
    assert reads.governance_on_primary() == []
    # The session, the user and the membership are read from the primary.
    assert any('"django_session"' in q["sql"] for q in reads.primary.captured_queries)


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/",
        "/api/v1/runs/{run}/",
        "/api/v1/evaluations/",
        "/api/v1/audit-log/",
        "/api/v1/evaluations/export?format=csv",
        "/api/v1/evaluations/export?format=jsonl&after_id=1",
        "/api/v1/audit-log/export?format=jsonl",
        "/api/v1/score-audit/",
        "/api/v1/agents/research-agent/score-audit/",
        "/api/v1/policies/{policy}/calibration/",
    ],
)
def test_api_reads_read_the_replica_and_the_key_the_primary(api, path):
    policy = create_policy(api)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.42], citations=["Federal Reserve Report"])
    time.sleep(1.1)  # past this client's own-write window (REPLICA_STICKY_SECONDS=1 below)

    with Reads() as reads:
        response = api.get(path.format(run=run_id, policy=policy["id"]))
        body = _body(response)

    assert response.status_code == 200, body[:300]
    assert reads.governance_on_replica()
    assert reads.governance_on_primary() == []
    assert any('"tenants_apikey"' in q["sql"] for q in reads.primary.captured_queries)
    assert not any('"tenants_apikey"' in q["sql"] for q in reads.replica.captured_queries)


@pytest.fixture(autouse=True)
def _short_sticky_window(settings):
    settings.REPLICA_STICKY_SECONDS = 1


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_writes_and_the_writers_next_reads_use_the_primary(api, other_api):
    # A key's first use records last_used_at: a write, so that request (and that client for a moment)
    # reads the primary. Get it out of the way for the other tenant's client.
    assert other_api.get("/api/v1/runs/").status_code == 200
    started = time.monotonic()
    create_policy(api)
    with Reads() as reads:
        run_id = start_run(api)
        ground(api, run_id, grounding_scores=[0.42], citations=["Federal Reserve Report"])
    assert reads.replica.captured_queries == []

    # The writer reads its own write back at once, from the primary...
    with Reads() as reads:
        detail = api.get(f"/api/v1/runs/{run_id}/")
    assert detail.status_code == 200 and detail.json()["id"] == run_id
    assert reads.replica.captured_queries == []
    assert reads.governance_on_primary()

    # ...while another client, who wrote nothing lately, reads the replica (and sees no other tenant's run).
    time.sleep(max(0.0, 1.1 - (time.monotonic() - started)))
    with Reads() as reads:
        assert other_api.get(f"/api/v1/runs/{run_id}/").status_code == 404
        assert other_api.get("/api/v1/runs/").json()["results"] == []
    assert reads.governance_on_replica() and reads.governance_on_primary() == []

    # After the window the writer reads the replica again.
    time.sleep(1.1)
    with Reads() as reads:
        assert api.get(f"/api/v1/runs/{run_id}/").status_code == 200
    assert reads.governance_on_replica() and reads.governance_on_primary() == []


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_reviewer_who_just_reviewed_reads_the_primary(bob, blocked, settings):
    _, violation = blocked
    client = signed_in(bob)
    # a window no loaded machine outlasts between the review and the next page (a 1 s one once
    # did); the signed cookie's age is checked against the setting on each read, so shortening it
    # below ends the window for the last step
    settings.REPLICA_STICKY_SECONDS = 60
    with Reads() as reads:
        posted = client.post(f"/violations/{violation.pk}/", {"state": "confirmed", "comment": "checked"})
    assert posted.status_code == 302
    assert reads.replica.captured_queries == []
    assert posted.cookies[routing.STICKY_COOKIE]

    with Reads() as reads:
        page = client.get(f"/violations/{violation.pk}/")
    assert page.status_code == 200 and b"confirmed" in page.content
    assert reads.replica.captured_queries == []

    settings.REPLICA_STICKY_SECONDS = 1
    time.sleep(1.1)
    with Reads() as reads:
        assert client.get("/violations/").status_code == 200
    assert reads.governance_on_replica() and reads.governance_on_primary() == []


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_another_tenants_run_is_404_on_the_replica_too(charlie, blocked):
    run, violation = blocked
    client = signed_in(charlie)
    with Reads() as reads:
        assert client.get(f"/runs/{run.pk}/").status_code == 404
        assert client.get(f"/violations/{violation.pk}/").status_code == 404
    assert reads.governance_on_replica()


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_replica_reads_off_keeps_every_read_on_the_primary(alice, blocked, settings):
    settings.REPLICA_READS = False
    with Reads() as reads:
        assert signed_in(alice).get("/runs/").status_code == 200
    assert reads.replica.captured_queries == [] and reads.governance_on_primary()


# --- Replay: a POST (or a task) that only reads -------------------------------------------------


def _history(api) -> dict:
    policy = create_policy(api)
    for _ in range(2):
        run_id = start_run(api)
        ground(api, run_id, grounding_scores=[0.42], citations=["Federal Reserve Report"])
    return policy


REPLAY = "/api/v1/policies/replay/"
CANDIDATE = {"policy": {"category": "grounding", "rules": {"min_grounding_score": 0.9}}}


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_replay_reads_the_stored_runs_from_the_replica(api):
    _history(api)
    time.sleep(1.1)

    with Reads() as reads:
        response = post_json(api, REPLAY, CANDIDATE)

    assert response.status_code == 200, response.content
    assert response.json()["reports"] == 2
    assert reads.governance_on_replica()
    assert reads.governance_on_primary() == []
    # The policies the replay compares with are read from the primary (the hot path's cache is filled
    # from what is read here, keyed by the primary's policy generation).
    assert not any('"policies_policy"' in q["sql"] for q in reads.replica.captured_queries)


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_replay_right_after_the_clients_own_write_reads_the_primary(api):
    _history(api)  # no pause: this client wrote a moment ago

    with Reads() as reads:
        response = post_json(api, REPLAY, CANDIDATE)

    assert response.status_code == 200 and response.json()["reports"] == 2
    assert reads.replica.captured_queries == []


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_replay_job_reads_the_runs_from_the_replica_and_writes_the_primary(api, acme, monkeypatch):
    from governance import replay

    _history(api)
    monkeypatch.setattr("governance.replay.RUN_CHUNK", 1)  # progress is saved between the chunks
    with scope(tenant=acme):
        plan = replay.replay_request(tenant=acme, data=CANDIDATE)
        job = replay.replay_job_create(tenant=acme, plan=plan, total=2)

    with Reads() as reads:  # as a worker runs it: no request around it
        assert replay.replay_job_execute(job_id=job.pk) == "done"

    job.refresh_from_db()
    assert job.status == ReplayJob.Status.DONE and job.done == 2 and job.result["reports"] == 2
    assert reads.governance_on_replica()
    assert reads.governance_on_primary() == []
    assert not any('"governance_replayjob"' in q["sql"] for q in reads.replica.captured_queries)


@needs_replica
@pytest.mark.replica
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_try_on_past_runs_reads_the_replica(api, alice):
    _history(api)
    client = signed_in(alice)
    time.sleep(1.1)
    form = {"category": "grounding", "name": "Tried", "description": "", "agents": "", "enabled": "on"}
    from policies.categories import get_category

    for spec in get_category("grounding").rules:
        if spec.type != "boolean":
            form[f"rule_{spec.name}"] = "" if spec.default is None else str(spec.default)
        elif spec.default:
            form[f"rule_{spec.name}"] = "on"

    with Reads() as reads:
        response = client.post("/policies/try/", form)

    assert response.status_code == 200 and "Fix the fields" not in response.text, response.text[:500]
    assert reads.governance_on_replica()
    assert reads.governance_on_primary() == []
