"""The API's JSON renderer (core/api/base.py): orjson's speed, DRF's bytes. Pure: no database."""

import datetime
import decimal
import json
import uuid

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer as DRFRenderer

from core.api.base import JSONRenderer

BODY = {
    "id": 7,
    "name": "Strict Research Grounding — “quoted”, 日本語, emoji 🙂",
    "line separators": "a\u2028b\u2029c",
    "scores": [0.1, 0.30000000000000004, 1.0, 0.0, -2.5, 123456789.125],
    "nested": {"flags": [True, False, None], "empty": {}, "list": []},
    "control": 'tab\tnewline\nquote"backslash\\nul\x00',
    "big": 2**63 - 1,
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "decimal": decimal.Decimal("0.25"),
    "lazy": gettext_lazy("Not found."),
    "when": datetime.datetime(2026, 11, 25, 23, 54, 14, 491123, tzinfo=datetime.UTC),
    "naive": datetime.datetime(2026, 11, 25, 23, 54, 14),
    "day": datetime.date(2026, 11, 25),
}


def test_the_bytes_are_drfs():
    assert JSONRenderer().render(BODY) == DRFRenderer().render(BODY)
    assert b"\\u2028" in JSONRenderer().render(BODY)  # a strict JavaScript subset, as DRF writes it


@pytest.mark.parametrize("value", [1e-05, 1e16, 2.5e-300, 10**30, -(10**25)])
def test_exponents_and_big_integers_read_back_the_same(value):
    # orjson writes 1e-5 where Python writes 1e-05; integers past 64 bits go through DRF's renderer.
    assert json.loads(JSONRenderer().render({"v": value})) == {"v": value}


def test_a_lone_surrogate_is_escaped_not_a_500():
    body = {"detail": {"\ud800": ["Unknown field."]}}
    assert json.loads(JSONRenderer().render(body)) == body


def test_indent_and_empty_bodies_are_drfs():
    assert JSONRenderer().render(BODY, "application/json; indent=2") == DRFRenderer().render(
        BODY, "application/json; indent=2"
    )
    assert JSONRenderer().render(None) == b""
