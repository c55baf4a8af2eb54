"""Exports resume with `after_id`, and chunking never changes the bytes (governance/exports.py).

On PostgreSQL each chunk is a COPY; elsewhere Python formats the same cells. Either way the file
is the same whatever the chunk size, and a download resumed after the last id it received
continues exactly where it stopped.
"""

import csv
import io
import json

import pytest
from django.db import DEFAULT_DB_ALIAS
from django_scopes import scope, scopes_disabled
from pages_support import signed_in
from test_exports import _make_evaluations

from governance import exports
from governance.models import Evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(acme):
    _make_evaluations(acme, 300)
    with scopes_disabled():
        return list(Evaluation.objects.order_by("id").values_list("id", flat=True))


def _get(api, query: str) -> str:
    response = api.get(f"/api/v1/evaluations/export?{query}")
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


def test_after_id_resumes_a_csv_download(api, rows):
    whole = list(csv.DictReader(io.StringIO(_get(api, "format=csv"))))
    cut = rows[123]

    rest = list(csv.DictReader(io.StringIO(_get(api, f"format=csv&after_id={cut}"))))

    assert [r["id"] for r in rest] == [str(i) for i in rows[124:]]
    assert rest == whole[124:]


def test_after_id_resumes_a_jsonl_download_with_filters(api, rows):
    whole = _get(api, "format=jsonl&action=block").splitlines()
    cut = json.loads(whole[10])["id"]

    rest = _get(api, f"format=jsonl&action=block&after_id={cut}").splitlines()

    assert rest == whole[11:]


@pytest.mark.parametrize("value", ["abc", "-1", "0", "1.5", str(2**63)])
def test_a_bad_after_id_is_a_400_naming_it(api, acme, value):
    response = api.get(f"/api/v1/evaluations/export?format=csv&after_id={value}")

    assert response.status_code == 400
    assert "after_id" in response.json()


def test_the_page_export_resumes_too(rows, bob):
    response = signed_in(bob).get(f"/evaluations/export?format=jsonl&after_id={rows[-2]}")

    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert [json.loads(x)["id"] for x in lines] == [rows[-1]]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_chunk_size_never_changes_the_file(acme, rows, fmt):
    with scope(tenant=acme):
        queryset = Evaluation.objects.filter(tenant=acme)

        def export(chunk):
            return b"".join(
                exports.stream(
                    tenant=acme,
                    queryset=queryset,
                    spec=exports.EVALUATIONS,
                    fmt=fmt,
                    alias=DEFAULT_DB_ALIAS,
                    chunk=chunk,
                )
            )

        whole = export(exports.CHUNK)
        assert export(7) == whole
        assert export(300) == whole  # a chunk that ends exactly on the last row
    assert whole.count(b"\n") >= len(rows)


def test_the_other_tenants_export_has_none_of_these_rows(other_api, rows):
    response = other_api.get("/api/v1/evaluations/export?format=jsonl")

    assert b"".join(response.streaming_content) == b""
