"""Query-count guards on the hot path and the lists, so an N+1 cannot creep in unseen.

The grounding call is what every agent makes at every step; it must cost the same handful of
queries however many policies apply. Lists must cost the same however many rows they show.
"""

import pytest
from api_support import STRICT, complete, create_policy, ground, post_json, start_run
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_score_audit_sample(acme):
    # A sampled report queues its audit (one outbox INSERT); the draw is random, the counts must not be.
    acme.score_audit_rate = 0
    acme.save(update_fields=["score_audit_rate"])


FIVE_POLICIES = [
    {**STRICT, "min_grounding_score": 0.5 + n / 20, "action_on_violation": ("warn", "block")[n % 2]} for n in range(5)
]


def _queries(call) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = call()
    assert response.status_code < 300, response.content
    return len(ctx.captured_queries)


def _policies(api, count: int, prefix: str = "Policy") -> None:
    for n in range(count):
        create_policy(api, name=f"{prefix} {n}", rules=FIVE_POLICIES[n % 5], agents=["research-*"])


def test_grounding_with_five_policies_is_a_handful_of_queries(api, django_assert_max_num_queries):
    _policies(api, 5)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.9])  # warms the per-process policy cache

    # key lookup, run row locked, report, run update, decision, evaluations (one bulk insert),
    # plus the savepoint pair the test transaction adds (BEGIN/COMMIT in production).
    with django_assert_max_num_queries(8):
        response = ground(api, run_id, grounding_scores=[0.9, 0.42], citations=["a", "b"], output_confidence=0.8)

    assert len(response.json()["decision"]["evaluations"]) == 5


def test_grounding_costs_the_same_for_one_policy_or_twenty(api):
    _policies(api, 1)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.9])
    one = _queries(lambda: ground(api, run_id, grounding_scores=[0.9]))

    _policies(api, 19, prefix="More")
    ground(api, run_id, grounding_scores=[0.9])
    twenty = _queries(lambda: ground(api, run_id, grounding_scores=[0.9]))

    assert twenty == one


def test_a_cold_policy_cache_costs_one_more_query(api):
    _policies(api, 5)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.9])
    warm = _queries(lambda: ground(api, run_id, grounding_scores=[0.9]))

    from policies.selectors import clear_policy_cache

    clear_policy_cache()
    cold = _queries(lambda: ground(api, run_id, grounding_scores=[0.9]))

    assert cold == warm + 1


def test_run_start_and_complete_are_bounded(api, django_assert_max_num_queries):
    _policies(api, 5)
    start_run(api)

    with django_assert_max_num_queries(8):
        run_id = start_run(api)
    with django_assert_max_num_queries(8):
        complete(api, run_id)


def test_ping_is_one_query(api, django_assert_max_num_queries):
    api.get("/api/v1/ping/")  # the first use writes last_used_at

    with django_assert_max_num_queries(1):
        assert api.get("/api/v1/ping/").status_code == 200


def _grow_runs(api, count: int) -> None:
    for _ in range(count):
        run_id = start_run(api)
        ground(api, run_id, grounding_scores=[0.5], citations=["x"])
        post_json(api, f"/api/v1/runs/{run_id}/spans/", {"kind": "tool", "name": "search"})
        complete(api, run_id)


@pytest.mark.parametrize(
    "path", ["/api/v1/runs/", "/api/v1/evaluations/", "/api/v1/audit-log/", "/api/v1/policies/", "/api/v1/secrets/"]
)
def test_lists_cost_the_same_as_rows_grow(api, path):
    _policies(api, 2)
    api.put("/api/v1/secrets/OPENAI_API_KEY/", {"value": "sk-0123456789"}, format="json")
    _grow_runs(api, 2)
    few = _queries(lambda: api.get(path))

    _policies(api, 5, prefix="More")
    for n in range(5):
        api.put(f"/api/v1/secrets/KEY_{n}/", {"value": "sk-0123456789"}, format="json")
    _grow_runs(api, 8)
    many = _queries(lambda: api.get(path))

    assert many == few
    assert many <= 3


def test_run_detail_costs_the_same_with_more_spans_reports_and_evaluations(api):
    _policies(api, 2)
    small = start_run(api)
    ground(api, small, grounding_scores=[0.5])
    big = start_run(api)
    for _ in range(6):
        ground(api, big, grounding_scores=[0.5], citations=["x"])
        post_json(api, f"/api/v1/runs/{big}/spans/", {"kind": "llm", "name": "gpt"})
    complete(api, big)

    assert _queries(lambda: api.get(f"/api/v1/runs/{big}/")) == _queries(lambda: api.get(f"/api/v1/runs/{small}/"))
    assert _queries(lambda: api.get(f"/api/v1/runs/{big}/")) <= 6


def test_a_shared_run_read_costs_the_same_with_thirty_reports_and_stays_the_tenants(api, other_api):
    """A run many reports go into (bench/load.py's shared runs) is read, summary and list pages alike,
    with no more queries than a fresh one; the lists page through every report and evaluation, and
    another tenant's key reaches none of it."""
    _policies(api, 5)
    fresh = start_run(api)
    shared = start_run(api)
    sources = [{"id": "fed", "text": "The Federal Reserve raised rates by 25 basis points in March 2023."}]
    ground(api, fresh, grounding_scores=[0.9], citations=["fed"], sources=sources)
    for n in range(30):
        ground(api, shared, grounding_scores=[0.9, 0.5 + n / 100], citations=["fed"], sources=sources)
    for path in ("", "reports/?page_size=10", "evaluations/?page_size=10", "spans/?page_size=10"):
        few = _queries(lambda path=path: api.get(f"/api/v1/runs/{fresh}/{path}"))
        many = _queries(lambda path=path: api.get(f"/api/v1/runs/{shared}/{path}"))
        assert many <= few, path

    summary = api.get(f"/api/v1/runs/{shared}/").json()
    assert summary["counts"] == {"reports": 30, "evaluations": 5 * 31, "violations": 50, "spans": 0}
    reports = api.get(f"/api/v1/runs/{shared}/reports/?page_size=500").json()["results"]
    assert [r["seq"] for r in reports] == list(range(1, 31))
    assert reports[-1]["sources"][0]["text"].startswith("The Federal Reserve")
    evaluations = api.get(f"/api/v1/runs/{shared}/evaluations/?page_size=500").json()["results"]
    assert len(evaluations) == 5 * 31  # before_workflow and thirty reports, five policies each
    assert {e["run_id"] for e in evaluations} == {shared}
    for path in ("", "reports/", "evaluations/", "spans/"):
        assert other_api.get(f"/api/v1/runs/{shared}/{path}").status_code == 404
    other = start_run(other_api)
    assert [
        e["run_id"] for e in other_api.get(f"/api/v1/runs/{other}/evaluations/").json()["results"]
    ] == []  # none of the shared run's
