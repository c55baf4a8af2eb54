"""Failures on the API answer JSON (issue 14 item 9 and the PostgreSQL part of item 3).

* any failure on an /api/ path is ``{"detail", "request_id"}``, never an HTML page;
* a PostgreSQL connection terminated in the middle of a request (``pg_terminate_backend``) is a
  503 with ``Retry-After``, and the next request works;
* SQLite (the embedded default: WAL, IMMEDIATE transactions, busy timeout) takes 32 concurrent
  reporters against a real threaded server with no error and no lost row.
"""

import socket
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from django.db import connection
from django_scopes import scope, scopes_disabled
from server_process import ServerProcess

from governance.api import ping
from governance.models import Evaluation, GroundingReport
from tenants import services as tenant_services
from tenants.audit import Actor


@pytest.mark.django_db
def test_unknown_api_path_is_json_404_with_request_id(api):
    response = api.get("/api/v1/no-such-thing/", HTTP_X_REQUEST_ID="req-404")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found.", "request_id": "req-404"}


@pytest.mark.django_db
def test_a_bug_in_an_api_view_is_json_500_not_html(api, monkeypatch):
    def broken(self, request):
        raise RuntimeError("a bug")

    monkeypatch.setattr(ping.PingView, "get", broken)
    api.raise_request_exception = False
    response = api.get("/api/v1/ping/", HTTP_X_REQUEST_ID="req-500")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Internal server error.", "request_id": "req-500"}
    assert "a bug" not in response.content.decode()


@pytest.mark.django_db
def test_dashboard_errors_stay_html(client, alice):
    client.force_login(alice)
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and "application/json" not in response["Content-Type"]


# --- PostgreSQL: a connection terminated mid-request --------------------------------------------

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs DATABASE_URL=postgres://… (pg_terminate_backend)"
)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_terminated_postgres_connection_is_503_with_retry_after_and_the_next_request_works(acme_key):
    api, _ = acme_key
    api.raise_request_exception = False
    run_id = api.post("/api/v1/runs/", {"agent_name": "a"}, format="json").json()["id"]
    params = connection.get_connection_params()
    queries = []

    def terminate_after_the_first_query(execute, sql, params_, many, context):
        queries.append(sql)
        if len(queries) == 2:  # mid-request: authentication has run, the report has not
            pid = connection.connection.info.backend_pid
            # A second connection of the test's own, as an operator's would be.
            with psycopg.connect(
                **{k: v for k, v in params.items() if k != "cursor_factory"}, autocommit=True
            ) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        return execute(sql, params_, many, context)

    with connection.execute_wrapper(terminate_after_the_first_query):
        response = api.post(
            f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.9]}, format="json", HTTP_X_REQUEST_ID="req-pg"
        )
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "1"
    assert response.json() == {"detail": "The database is unavailable; retry shortly.", "request_id": "req-pg"}
    again = api.post(f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.9]}, format="json")
    assert again.status_code == 200, again.content
    detail = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert len(detail["reports"]) == 1  # the failed attempt stored nothing; the retry stored one


# --- SQLite: 32 concurrent reporters ----------------------------------------------------------

REPORTERS = 32
REPORTS_EACH = 6


def test_sqlite_takes_32_concurrent_reporters_without_an_error(tmp_path):
    with ServerProcess(tmp_path) as server:
        key = server.api_key("agent")
        headers = {"Authorization": f"Bearer {key}"}
        statuses: list[int] = []
        bodies: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(REPORTERS)

        def reporter(i: int) -> None:
            with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
                barrier.wait()
                started = http.post("/api/v1/runs/", json={"agent_name": f"agent-{i}"})
                record = [started]
                if started.status_code == 201:
                    run_id = started.json()["id"]
                    for n in range(REPORTS_EACH):
                        record.append(
                            http.post(f"/api/v1/runs/{run_id}/grounding/", json={"grounding_scores": [0.5 + n / 100]})
                        )
                    record.append(http.post(f"/api/v1/runs/{run_id}/complete/", json={"output": "done"}))
            with lock:
                statuses.extend(r.status_code for r in record)
                bodies.extend(r.text[:200] for r in record if r.status_code >= 400)

        with ThreadPoolExecutor(REPORTERS) as pool:
            list(pool.map(reporter, range(REPORTERS)))

    assert len(statuses) == REPORTERS * (REPORTS_EACH + 2)
    assert all(s < 400 for s in statuses), (sorted(set(statuses)), bodies[:3])
    db = sqlite3.connect(server.db)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT COUNT(*) FROM governance_run").fetchone()[0] == REPORTERS
    assert db.execute("SELECT COUNT(*) FROM governance_groundingreport").fetchone()[0] == REPORTERS * REPORTS_EACH
    db.close()


# --- a provider that hangs past the budget --------------------------------------------------------


@pytest.mark.django_db
def test_a_provider_that_never_answers_gives_the_degraded_allow_within_the_budget(api, acme, make_policy, settings):
    """The existing judge test delays an answer; here the provider accepts the connection and never
    says anything. The report still answers within the sync budget, allowed, and is stored."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.JUDGE_SYNC_BUDGET_SECONDS = 1.0
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepted by the kernel, never read, never answered
    try:
        with scope(tenant=acme):
            actor = Actor.system("tests")
            tenant_services.secret_set(tenant=acme, name="OPENAI_API_KEY", value="sk-test-abcdef123456", actor=actor)
            tenant_services.secret_set(
                tenant=acme, name="OPENAI_BASE_URL", value=f"http://127.0.0.1:{silent.getsockname()[1]}/v1", actor=actor
            )
        make_policy(
            rules={
                "min_grounding_score": 0.5,
                "action_on_violation": "block",
                "llm_grounding_check": True,
                "llm_grounding_model": "gpt-4o-mini",
                "llm_grounding_threshold": 0.7,
                "llm_grounding_phase": "mid_execution",
            }
        )
        run_id = api.post("/api/v1/runs/", {"agent_name": "a"}, format="json").json()["id"]
        started = time.perf_counter()
        response = api.post(
            f"/api/v1/runs/{run_id}/grounding/",
            {
                "grounding_scores": [0.9],
                "output": "The sky is blue.",
                "sources": [{"id": "s", "text": "The sky is blue."}],
            },
            format="json",
        )
        elapsed = time.perf_counter() - started
    finally:
        silent.close()
    assert response.status_code == 200
    assert elapsed < 1.0 + 1.0, f"answered after {elapsed:.1f}s"
    decision = response.json()["decision"]
    assert decision["action"] == "allow"
    judged = next(e for e in decision["evaluations"] if e.get("source") == "llm_judge")
    assert judged["reason"].startswith("LLM judge skipped: timed out")
    with scopes_disabled():
        assert GroundingReport.objects.filter(run_id=run_id).count() == 1
        assert Evaluation.objects.get(run_id=run_id, source="llm_judge").action == "allow"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("get", "/api/v1/runs/987654321/", 404),  # a view's own 404
        ("put", "/api/v1/ping/", 405),
        ("post", "/api/v1/runs/", 400),  # malformed JSON: not about a named field
    ],
)
def test_every_failure_that_names_no_field_carries_the_request_id(api, method, path, status):
    body = "{not json" if status == 400 else None
    response = getattr(api, method)(path, body, content_type="application/json", HTTP_X_REQUEST_ID="req-4xx")
    assert response.status_code == status
    assert response.json()["request_id"] == "req-4xx"
    assert response.json()["detail"]


@pytest.mark.django_db
def test_field_errors_keep_naming_only_the_fields(api):
    response = api.post("/api/v1/runs/", {"agent_name": ""}, format="json", HTTP_X_REQUEST_ID="req-field")
    assert response.status_code == 400
    assert set(response.json()) == {"agent_name"}
    assert response["X-Request-ID"] == "req-field"


@pytest.mark.django_db
def test_an_unauthenticated_call_carries_the_request_id(client):
    response = client.get("/api/v1/runs/", HTTP_AUTHORIZATION="Bearer gr_nope", HTTP_X_REQUEST_ID="req-401")
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid or revoked API key.", "request_id": "req-401"}
