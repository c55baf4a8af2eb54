"""Streamed exports of evaluations and the audit log: every matching row, exactly as stored.

An auditor downloads thousands of rows; the server streams them in chunks (constant memory, a
bounded number of queries) and the file parses back to the rows in the database.
"""

import csv
import io
import json
from datetime import datetime, timedelta

import pytest
from api_support import create_policy, ground, start_run
from django.http import StreamingHttpResponse
from django.utils import timezone
from django_scopes import scope, scopes_disabled

from governance import exports
from governance.models import Evaluation, Run
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

ROWS = 5_200
PHASES = ("before_workflow", "mid_execution", "after_workflow")
ACTIONS = ("allow", "warn", "block")


def _make_evaluations(acme, count: int) -> list[Run]:
    """Evaluations over five runs, with text a CSV writer has to work for."""
    base = timezone.now() - timedelta(days=30)
    with scope(tenant=acme):
        runs = [Run.objects.create(tenant=acme, agent_name=f"agent-{n}") for n in range(5)]
        Evaluation.objects.bulk_create(
            [
                Evaluation(
                    tenant=acme,
                    run=runs[i % 5],
                    agent_name=runs[i % 5].agent_name,
                    policy_ref=100 + i % 7 if i % 11 else None,
                    policy_name=f'Policy, "{i % 7}"',
                    policy_version=1 + i % 3,
                    category="grounding",
                    phase=PHASES[i % 3],
                    action=ACTIONS[i % 3],
                    reason=(
                        f'=HYPERLINK("http://evil/{i}")'
                        if i % 97 == 0
                        else f"Grounding score (0.{i % 100:02d}) below threshold (0.7); línea\nnueva 🤖"
                    ),
                    metadata={"score": (i % 100) / 100, "warnings": [f"w{i}", "ünï"], "nested": {"i": i}},
                    created_at=base + timedelta(seconds=i, microseconds=i),
                    review_comment="" if i % 5 else f"Checked by bob, row {i}",
                )
                for i in range(count)
            ],
            batch_size=1000,
        )
    return runs


@pytest.fixture
def many_evaluations(acme):
    return _make_evaluations(acme, ROWS)


@pytest.fixture
def some_evaluations(acme):
    return _make_evaluations(acme, 400)


def _db_rows(**filters) -> list[Evaluation]:
    with scopes_disabled():
        return list(Evaluation.objects.filter(**filters).order_by("id"))


def _body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode("utf-8")


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _csv_text(value: str) -> str:
    # Cells that would start a spreadsheet formula are prefixed with a quote on purpose.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _assert_csv_row_matches(row: dict, e: Evaluation) -> None:
    assert row["id"] == str(e.id)
    assert _when(row["created_at"]) == e.created_at
    assert row["run_id"] == str(e.run_id)
    assert row["agent_name"] == e.agent_name
    assert row["policy_id"] == ("" if e.policy_ref is None else str(e.policy_ref))
    assert row["policy_name"] == e.policy_name
    assert row["policy_version"] == str(e.policy_version)
    assert (row["category"], row["phase"], row["action"]) == (e.category, e.phase, e.action)
    assert row["reason"] == _csv_text(e.reason)
    assert json.loads(row["metadata"]) == e.metadata
    assert (row["source"], row["review_state"]) == (e.source, e.review_state)
    assert row["reviewed_at"] == ("" if e.reviewed_at is None else e.reviewed_at.isoformat())
    assert row["review_comment"] == e.review_comment


def test_csv_export_streams_every_row_exactly(api, many_evaluations, django_assert_max_num_queries):
    response = api.get("/api/v1/evaluations/export?format=csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="evaluations-')
    assert response["Content-Disposition"].endswith('.csv"')

    # Keyset pages of 2,000 rows: a handful of queries for any number of rows, no per-row query.
    with django_assert_max_num_queries(6):
        chunks = list(response.streaming_content)

    assert len(chunks) > 1
    rows = list(csv.DictReader(io.StringIO(b"".join(chunks).decode("utf-8"))))
    expected = _db_rows()
    assert len(rows) == len(expected) == ROWS
    for row, evaluation in zip(rows, expected, strict=True):
        _assert_csv_row_matches(row, evaluation)


def test_csv_export_header_is_the_documented_columns(api, some_evaluations):
    first_line = _body(api.get("/api/v1/evaluations/export?format=csv")).split("\r\n", 1)[0]

    assert first_line.split(",") == exports.EVALUATION_COLUMNS


def test_csv_cells_cannot_start_a_spreadsheet_formula(api, some_evaluations):
    rows = list(csv.DictReader(io.StringIO(_body(api.get("/api/v1/evaluations/export?format=csv")))))

    formulas = [r["reason"] for r in rows if "HYPERLINK" in r["reason"]]
    assert formulas and all(reason.startswith("'=") for reason in formulas)


def test_jsonl_export_streams_every_row_exactly(api, many_evaluations):
    response = api.get("/api/v1/evaluations/export?format=jsonl")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    lines = _body(response).splitlines()
    expected = _db_rows()
    assert len(lines) == len(expected) == ROWS
    for line, e in zip(lines, expected, strict=True):
        item = json.loads(line)
        assert set(item) == set(exports.EVALUATION_COLUMNS)
        assert _when(item["created_at"]) == e.created_at
        assert item == {
            "id": e.id,
            "created_at": item["created_at"],
            "run_id": e.run_id,
            "agent_name": e.agent_name,
            "policy_id": e.policy_ref,
            "policy_name": e.policy_name,
            "policy_version": e.policy_version,
            "category": e.category,
            "phase": e.phase,
            "action": e.action,
            "reason": e.reason,
            "metadata": e.metadata,
            "source": e.source,
            "review_state": e.review_state,
            "reviewed_at": None,
            "review_comment": e.review_comment,
        }


def test_csv_and_jsonl_agree(api, some_evaluations):
    csv_rows = list(csv.DictReader(io.StringIO(_body(api.get("/api/v1/evaluations/export?format=csv&action=block")))))
    json_rows = [
        json.loads(x) for x in _body(api.get("/api/v1/evaluations/export?format=jsonl&action=block")).splitlines()
    ]

    assert [r["id"] for r in csv_rows] == [str(r["id"]) for r in json_rows]
    assert [r["created_at"] for r in csv_rows] == [r["created_at"] for r in json_rows]


@pytest.mark.parametrize(
    "query, filters",
    [
        ("action=block", {"action": "block"}),
        ("action=warn&action=block", {"action__in": ["warn", "block"]}),
        ("phase=after_workflow", {"phase": "after_workflow"}),
        ("agent=agent-3", {"agent_name": "agent-3"}),
        ("policy=103", {"policy_ref": 103}),
    ],
)
def test_filters_apply_to_the_export(api, some_evaluations, query, filters):
    rows = list(csv.DictReader(io.StringIO(_body(api.get(f"/api/v1/evaluations/export?format=csv&{query}")))))

    expected = _db_rows(**filters)
    assert 0 < len(rows) < 400
    assert [r["id"] for r in rows] == [str(e.id) for e in expected]


def test_time_filters_apply_to_the_export(api, some_evaluations):
    rows = _db_rows()
    since, until = rows[100].created_at, rows[300].created_at
    query = f"since={since.isoformat()}&until={until.isoformat()}".replace("+", "%2B")

    lines = _body(api.get(f"/api/v1/evaluations/export?format=jsonl&{query}")).splitlines()

    assert [json.loads(x)["id"] for x in lines] == [e.id for e in rows[100:300]]


def test_an_export_with_no_rows_is_just_the_header(api, acme):
    assert _body(api.get("/api/v1/evaluations/export?format=csv")) == ",".join(exports.EVALUATION_COLUMNS) + "\r\n"
    assert _body(api.get("/api/v1/evaluations/export?format=jsonl")) == ""


def test_csv_is_the_default_format(api, acme):
    response = api.get("/api/v1/evaluations/export")

    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")


@pytest.mark.parametrize("path", ["/api/v1/evaluations/export", "/api/v1/audit-log/export"])
@pytest.mark.parametrize("fmt", ["xml", "CSV", "json", ""])
def test_an_unknown_format_is_a_400(api, acme, path, fmt):
    response = api.get(f"{path}?format={fmt}")

    assert response.status_code == 400
    assert "format" in response.json()


def test_a_bad_filter_on_an_export_is_a_400(api, acme):
    response = api.get("/api/v1/evaluations/export?format=csv&since=last-week")

    assert response.status_code == 400
    assert "since" in response.json()


def test_exported_evaluations_from_real_runs_match_the_api_list(api):
    create_policy(api)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.42], citations=["Federal Reserve Report"])

    listed = api.get("/api/v1/evaluations/").json()["results"]
    exported = [json.loads(x) for x in _body(api.get("/api/v1/evaluations/export?format=jsonl")).splitlines()]

    assert [e["id"] for e in exported] == sorted(e["id"] for e in listed)
    by_id = {e["id"]: e for e in listed}
    for item in exported:
        same = by_id[item["id"]]
        for column in ("run_id", "policy_id", "policy_name", "policy_version", "phase", "action", "reason", "metadata"):
            assert item[column] == same[column]
        assert _when(item["created_at"]) == _when(same["created_at"])


# --- The audit log -------------------------------------------------------------------------


@pytest.fixture
def many_audit_events(acme):
    with scope(tenant=acme):
        AuditEvent.objects.bulk_create(
            [
                AuditEvent(
                    tenant=acme,
                    action=f"policies.policy.{('created', 'updated')[i % 2]}",
                    actor_label="alice",
                    request_id=f"req-{i}",
                    object_type="policies.policy",
                    object_id=str(i),
                    object_repr=f"P, {i}",
                    before=None if i % 2 == 0 else {"rules": {"min_citations": i}},
                    after={"rules": {"min_citations": i + 1}, "name": "Ω"},
                )
                for i in range(5_100)
            ],
            batch_size=1000,
        )


def test_audit_log_csv_export_matches_the_rows(api, many_audit_events):
    response = api.get("/api/v1/audit-log/export?format=csv")

    assert response["Content-Disposition"].startswith('attachment; filename="audit-log-')
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    with scopes_disabled():
        expected = list(AuditEvent.objects.order_by("id"))
    assert len(rows) == len(expected) > 5_000
    for row, e in zip(rows, expected, strict=True):
        assert row["id"] == str(e.id)
        assert _when(row["created_at"]) == e.created_at
        assert (row["action"], row["actor"], row["request_id"]) == (e.action, e.actor_label, e.request_id)
        assert (row["object_type"], row["object_id"], row["object_repr"]) == (e.object_type, e.object_id, e.object_repr)
        assert (json.loads(row["before"]) if row["before"] else None) == e.before
        assert (json.loads(row["after"]) if row["after"] else None) == e.after


def test_audit_log_jsonl_export_filters_by_action(api, many_audit_events):
    lines = _body(api.get("/api/v1/audit-log/export?format=jsonl&action=policies.policy.updated")).splitlines()

    with scopes_disabled():
        expected = list(AuditEvent.objects.filter(action="policies.policy.updated").order_by("id"))
    assert [json.loads(x)["id"] for x in lines] == [e.id for e in expected]
    assert json.loads(lines[0])["before"] == expected[0].before
