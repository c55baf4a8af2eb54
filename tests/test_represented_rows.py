"""`represented_rows`: the run detail's evaluations read as rows give exactly what the serializer
gives for model instances (core/api/contract.py), whatever the values and the time zone."""

from datetime import UTC, datetime, timedelta

import pytest
from api_support import STRICT, create_policy, ground, start_run
from django.core.exceptions import ImproperlyConfigured
from django.db.models import JSONField, Value
from django.utils import timezone
from django_scopes import scopes_disabled

from core.api.contract import represented, represented_rows
from governance.api.serializers import EvaluationOut, ReportOut, RunDetailOut, report_rows
from governance.models import Evaluation, GroundingReport, Run, attach_sources

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluations(api):
    create_policy(api, "Strict", STRICT)
    create_policy(api, "Lenient", {"min_grounding_score": 0.1}, mode="shadow")
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.2], citations=[], unsupported_claims=["Ünïcode <b>claim</b>"])
    ground(api, run_id, grounding_scores=[0.95, 0.9], citations=["a", "b"])
    with scopes_disabled():
        rows = Evaluation.objects.filter(run_id=run_id).order_by("id")
        first = rows.first()
        # Every kind of value a column can hold: a review with its time, a missing policy, nested metadata.
        first.review_state = "confirmed"
        first.reviewed_at = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
        first.review_comment = "checked \u2713"
        first.policy_ref = None
        first.metadata = {"nested": [1, 2.5, None, {"k": "v"}], "flag": True}
        first.save()
        rows.exclude(pk=first.pk).filter(phase="mid_execution").update(created_at=timezone.now() - timedelta(days=40))
        yield rows


def _as_instances(rows):
    return [represented(EvaluationOut, evaluation) for evaluation in rows]


def test_rows_equal_what_the_serializer_gives_for_instances(evaluations):
    with scopes_disabled():
        expected = _as_instances(evaluations)
        assert len(expected) >= 4
        assert any(e["shadow"] for e in expected) and any(e["policy_id"] is None for e in expected)
        assert expected[0]["reviewed_at"] == "2026-03-01T12:30:15.123456Z"
        assert represented_rows(EvaluationOut, evaluations) == expected


@pytest.mark.parametrize("zone", ["Europe/Paris", "America/St_Johns", "Asia/Kolkata"])
def test_rows_follow_the_current_time_zone_as_the_serializer_does(evaluations, zone):
    with scopes_disabled(), timezone.override(zone):
        expected = _as_instances(evaluations)
        assert not expected[0]["reviewed_at"].endswith("Z")
        assert represented_rows(EvaluationOut, evaluations) == expected


def test_a_serializer_with_computed_fields_is_refused():
    with pytest.raises(ImproperlyConfigured, match="RunDetailOut.citations is not a model column"):
        represented_rows(RunDetailOut, Evaluation.objects.none())


def test_report_rows_equal_what_the_serializer_gives_for_instances(api):
    run_id = start_run(api)
    first = [
        {"id": "a", "text": "Alpha was founded in 1990.", "score": 0.9},
        {"id": "b", "text": "Beta."},
    ]
    assert ground(api, run_id, grounding_scores=[0.9], citations=["a"], sources=first).status_code == 200
    # The same id with another text, a source given twice, a huge integer and a quote object.
    again = [{"id": "a", "text": "Alpha was founded in 1991."}, {"id": "a", "text": "Alpha was founded in 1991."}]
    body = {"citations": [{"source_id": "a", "quote": "founded"}], "unsupported_claims": ["Ünïcode"], "sources": again}
    assert ground(api, run_id, grounding_scores=[0.5], output_confidence=0.25, output="x", **body).status_code == 200
    assert ground(api, run_id).status_code == 200  # no sources at all
    with scopes_disabled():
        run = Run.objects.get(pk=run_id)
        GroundingReport.objects.filter(run=run, seq=2).update(grounding_scores=[0.5, 12345678901234567890123])
        reports = attach_sources(GroundingReport.objects.filter(run=run).order_by("seq"))
        expected = [represented(ReportOut, report) for report in reports]

        rows = report_rows(run)

    assert rows == expected
    assert [list(row) for row in rows] == [list(e) for e in expected] == [ReportOut.Meta.fields] * 3
    assert rows[1]["grounding_scores"][1] == 12345678901234567890123  # exact, not a float
    assert [s["text"] for s in rows[0]["sources"]] == ["Alpha was founded in 1990.", "Beta."]
    assert rows[0]["sources"][0]["score"] == 0.9 and len(rows[1]["sources"]) == 2


def test_the_run_detail_adds_up_the_reports_it_lists(api):
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.9], citations=["a"], unsupported_claims=["one"], output_confidence=0.4)
    ground(api, run_id, grounding_scores=[0.9], citations=["b"], unsupported_claims=["two"])
    body = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert [r["seq"] for r in body["reports"]] == [1, 2]
    assert body["citations"] == ["a", "b"]
    assert body["unsupported_claims"] == ["one", "two"]
    assert body["output_confidence"] == 0.4


def test_metadata_read_as_one_document_keeps_every_value_as_the_serializer_does(evaluations):
    """The JSON column is decoded in one call (core/api/contract.py `_json_column`); a text that one
    call would misread (an integer beyond 64 bits) sends the column back to one decode per text."""
    with scopes_disabled():
        first, second, third = list(evaluations.all()[:3])
        first.metadata = {"hash": "1234567890123456789012", "note": "[1, 12345678901234567890]", "n": None}
        first.save()
        Evaluation.objects.filter(pk=second.pk).update(metadata=Value(None, JSONField()))  # JSON null
        assert represented_rows(EvaluationOut, evaluations.all()) == _as_instances(evaluations.all())

        third.metadata = {"huge": 12345678901234567890123, "list": [-98765432109876543210]}
        third.save()
        rows = represented_rows(EvaluationOut, evaluations.all())
        assert rows == _as_instances(evaluations.all())
        assert rows[2]["metadata"]["huge"] == 12345678901234567890123  # exact, not a float
        assert rows[1]["metadata"] is None


def test_evaluations_of_one_decision_share_a_timestamp_and_each_row_gets_it(evaluations):
    with scopes_disabled():
        rows = represented_rows(EvaluationOut, evaluations.all())
        expected = _as_instances(evaluations.all())
    assert [r["created_at"] for r in rows] == [e["created_at"] for e in expected]
    assert len({r["created_at"] for r in rows}) < len(rows)
