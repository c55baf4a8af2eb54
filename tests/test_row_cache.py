"""A run's detail built from rows kept per process (core/api/row_cache.py): on PostgreSQL each report
and evaluation is built once per version of its row, and whatever changes a row shows at once."""

import re
import threading

import pytest
from api_support import STRICT, create_policy, ground, start_run
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from core.api.row_cache import RowCache, row_cache
from governance.models import Evaluation
from governance.reviews import evaluation_review
from tenants import services as tenant_services
from tenants.audit import Actor

pytestmark = pytest.mark.django_db
postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="row versions are PostgreSQL's xmin")


@pytest.fixture(autouse=True)
def empty_cache():
    row_cache().clear()
    yield
    row_cache().clear()


@pytest.fixture
def run_id(api):
    create_policy(api, "Strict", STRICT)
    run_id = start_run(api)
    ground(api, run_id, grounding_scores=[0.2], citations=[], unsupported_claims=["A claim"])
    ground(
        api,
        run_id,
        grounding_scores=[0.95, 0.9],
        citations=["a", "b"],
        sources=[{"id": "a", "text": "Alpha."}, {"id": "b", "text": "Beta."}],
    )
    return run_id


def _read(api, run_id) -> tuple[dict, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = api.get(f"/api/v1/runs/{run_id}/?expand=all")
    assert response.status_code == 200, response.content
    return response.json(), [q["sql"] for q in ctx.captured_queries]


def _uncached(api, run_id, settings) -> dict:
    limit = settings.ROW_CACHE_BYTES
    settings.ROW_CACHE_BYTES = 0
    try:
        return _read(api, run_id)[0]
    finally:
        settings.ROW_CACHE_BYTES = limit


def _full_row_reads(sql: list[str]) -> list[str]:
    """The queries that read an evaluation's or a report's content (not only its id and version)."""
    return [
        q
        for q in sql
        if ('FROM "governance_evaluation"' in q and '"metadata"' in q)
        or ('FROM "governance_groundingreport"' in q and '"unsupported_claims"' in q)
    ]


def _digest_checks(sql: list[str]) -> list[str]:
    """The statements that ask whether a kept list still holds (core/api/row_cache.py, `_appended`)."""
    return [q for q in sql if "md5(string_agg(" in q]


@postgresql_only
def test_a_second_read_builds_no_row_again_and_answers_the_same(api, run_id, settings):
    first, sql = _read(api, run_id)
    assert len(_full_row_reads(sql)) == 2 and _digest_checks(sql) == []
    again, sql = _read(api, run_id)
    assert again == first == _uncached(api, run_id, settings)
    assert _full_row_reads(sql) == []
    # The reports and the evaluations: one statement each says that nothing changed or came.
    assert len(_digest_checks(sql)) == 2 and not any("xmin" in q for q in sql if q not in _digest_checks(sql))
    assert len(first["evaluations"]) >= 3 and [r["seq"] for r in first["reports"]] == [1, 2]
    assert {k: first["reports"][1]["sources"][0][k] for k in ("id", "text")} == {"id": "a", "text": "Alpha."}


@postgresql_only
def test_new_rows_are_read_alone_and_appended_in_order(api, run_id, settings):
    before, _ = _read(api, run_id)
    ground(api, run_id, grounding_scores=[0.1], citations=[])
    after, sql = _read(api, run_id)
    assert len(_digest_checks(sql)) == 2  # the kept lists held: only what came after them was asked for
    assert after == _uncached(api, run_id, settings)
    assert [r["seq"] for r in after["reports"]] == [1, 2, 3]
    assert after["evaluations"][: len(before["evaluations"])] == before["evaluations"]
    # Only the new rows were read in full: their ids are in the query, the others' are not.
    new_ids = {e["id"] for e in after["evaluations"]} - {e["id"] for e in before["evaluations"]}
    evaluation_read = next(q for q in _full_row_reads(sql) if 'FROM "governance_evaluation"' in q)
    listed = re.search(r'"governance_evaluation"\."id" IN \(([^)]*)\)', evaluation_read)
    assert new_ids and {int(pk) for pk in listed.group(1).split(",")} == new_ids


@postgresql_only
def test_a_review_shows_at_once(api, run_id, bob):
    read, _ = _read(api, run_id)
    _read(api, run_id)  # the list is kept now
    violation = next(e for e in read["evaluations"] if e["action"] in ("warn", "block"))
    with scopes_disabled():
        row = Evaluation.objects.get(pk=violation["id"])
        evaluation_review(evaluation=row, state="confirmed", comment="Seen", actor=Actor(user=bob))
    after, _ = _read(api, run_id)
    reviewed = next(e for e in after["evaluations"] if e["id"] == violation["id"])
    assert (reviewed["review_state"], reviewed["review_comment"]) == ("confirmed", "Seen")
    assert reviewed["reviewed_at"] is not None


@postgresql_only
def test_any_change_to_a_row_shows_even_one_made_in_sql(api, run_id):
    """A data migration or a fix by hand writes a new row version: nothing stale is answered, even
    when the change is made by the transaction that wrote the row (as here: one test, one transaction)."""
    read, _ = _read(api, run_id)
    _read(api, run_id)  # the list is kept now
    target = read["evaluations"][0]["id"]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_evaluation SET metadata = %s, reason = %s WHERE id = %s",
            ['{"fixed": true}', "Fixed by hand", target],
        )
    after, _ = _read(api, run_id)
    changed = next(e for e in after["evaluations"] if e["id"] == target)
    assert changed["metadata"] == {"fixed": True} and changed["reason"] == "Fixed by hand"


@postgresql_only
def test_a_row_that_lands_among_the_earlier_ones_is_read(api, run_id, settings):
    """A transaction that took its id early and committed late: its row sorts before the last one
    answered, so the kept list no longer holds and the next read has it."""
    read, _ = _read(api, run_id)
    _read(api, run_id)
    with scopes_disabled():
        late = Evaluation.objects.get(pk=read["evaluations"][1]["id"])
        late.pk, late.reason = read["evaluations"][0]["id"] - 1_000_000, "Committed late"
        late.save(force_insert=True)
    after, _ = _read(api, run_id)
    assert after == _uncached(api, run_id, settings)
    assert after["evaluations"][0]["reason"] == "Committed late"
    assert len(after["evaluations"]) == len(read["evaluations"]) + 1


@postgresql_only
def test_a_deleted_row_is_gone_from_the_next_read(api, run_id):
    read, _ = _read(api, run_id)
    _read(api, run_id)  # the list is kept now
    target = read["evaluations"][-1]["id"]
    with scopes_disabled():
        Evaluation.objects.filter(pk=target).delete()
    after, _ = _read(api, run_id)
    assert [e["id"] for e in after["evaluations"]] == [e["id"] for e in read["evaluations"][:-1]]


def test_without_row_versions_every_read_builds_its_rows(api, run_id, settings):
    """Other databases (and ROW_CACHE_BYTES=0) read every row in full each time, as before."""
    settings.ROW_CACHE_BYTES = 0 if connection.vendor == "postgresql" else settings.ROW_CACHE_BYTES
    first, _ = _read(api, run_id)
    again, sql = _read(api, run_id)
    assert again == first
    assert len(_full_row_reads(sql)) == 2
    assert not any("xmin" in q for q in sql)
    assert len(row_cache()) == 0


@postgresql_only
def test_another_tenants_run_is_a_404_even_with_its_rows_kept(api, other_api, run_id):
    _read(api, run_id)  # its rows are now in the process's cache
    assert other_api.get(f"/api/v1/runs/{run_id}/?expand=all").status_code == 404


def test_the_cache_keeps_its_byte_bound_least_recently_used_out_first():
    cache = RowCache(max_bytes=1000)
    rows = {key: {"id": key, "text": "x" * 200} for key in range(4)}
    cache.put_many([(k, rows[k]) for k in (0, 1, 2)])
    assert len(cache) == 3 and cache.bytes <= 1000
    assert cache.get_many([0]) == {0: rows[0]}  # 0 is now the most recently used
    cache.put_many([(3, rows[3])])
    assert set(cache.get_many([0, 1, 2, 3])) == {0, 2, 3}  # 1 was the least recently used
    assert cache.bytes <= 1000
    cache.put_many([("big", {"text": "y" * 5000})])  # larger than the whole cache: not kept
    assert cache.get_many(["big"]) == {} and len(cache) == 3
    cache.put_many([(3, {"id": 3})])  # a key written again replaces its entry and its weight
    assert cache.get_many([3]) == {3: {"id": 3}} and len(cache) == 3
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


@postgresql_only
def test_a_cache_too_small_for_the_run_still_answers_it_whole(api, run_id, settings):
    """Rows and kept lists evicted before they are used again: every read falls back to reading."""
    expected = _uncached(api, run_id, settings)
    settings.ROW_CACHE_BYTES = 1500
    for _ in range(3):
        assert _read(api, run_id)[0] == expected
    ground(api, run_id, grounding_scores=[0.3], citations=[])
    assert _read(api, run_id)[0] == _uncached(api, run_id, settings)
    assert row_cache().bytes <= 1500


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_reads_while_reports_land_are_whole_and_the_last_equals_an_uncached_read(acme, settings):
    """Two agents report into one run while two readers read it over the API, each in its own
    thread and connection, one process and one cache: every answer is a whole run (reports numbered
    1..n, evaluations in id order, none twice), and once the writers stop the cached answer is
    exactly the uncached one."""
    _, raw = tenant_services.api_key_create(tenant=acme, name="load", actor=Actor.system("tests"), scope="admin")

    def client() -> APIClient:
        return APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}")

    create_policy(client(), "Strict", STRICT)
    run_id = start_run(client())
    errors: list[str] = []
    answers: list[int] = []
    writing = threading.Event()
    writing.set()

    def writer(worker: int) -> None:
        try:
            api = client()
            for n in range(12):
                response = ground(api, run_id, grounding_scores=[0.5 + n / 40], citations=[f"w{worker}"])
                if response.status_code != 200:
                    errors.append(f"report {response.status_code}")
        except Exception as exc:  # an assertion in a thread would be lost: reported below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    def reader() -> None:
        try:
            api = client()
            while writing.is_set():
                body = api.get(f"/api/v1/runs/{run_id}/?expand=all").json()
                seqs = [r["seq"] for r in body["reports"]]
                ids = [e["id"] for e in body["evaluations"]]
                if seqs != list(range(1, len(seqs) + 1)) or ids != sorted(set(ids)):
                    errors.append(f"torn answer: seqs {seqs}, ids {ids}")
                answers.append(len(seqs))
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connections.close_all()

    readers = [threading.Thread(target=reader) for _ in range(2)]
    writers = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    writing.clear()
    for t in readers:
        t.join()

    assert errors == []
    assert len(answers) >= 4 and max(answers) <= 24
    final = client().get(f"/api/v1/runs/{run_id}/?expand=all").json()
    assert [r["seq"] for r in final["reports"]] == list(range(1, 25))
    settings.ROW_CACHE_BYTES = 0
    assert client().get(f"/api/v1/runs/{run_id}/?expand=all").json() == final
