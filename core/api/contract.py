"""The one way an API view reads its body and writes its answer.

Every view validates with a strict input serializer (``validated``) and answers through an
output serializer (``represented``), so the OpenAPI schema, built from the same serializers,
describes each body exactly.

Both use one unbound instance per serializer class. A DRF serializer deep-copies its declared
fields on every instantiation: about a quarter of a millisecond for the grounding report's
serializer, measured against bench/report.py's hot path (docs/benchmarks.md). These
serializers keep no per-call state (no context, no instance), so one instance serves every
request, and a bad input raises the same 400 as ``is_valid(raise_exception=True)``.
"""

import json
import re
from functools import cache

import orjson
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import models
from django.db.models.functions import Cast
from rest_framework import ISO_8601, exceptions, fields
from rest_framework.serializers import BaseSerializer, ModelSerializer, as_serializer_error
from rest_framework.settings import api_settings


@cache
def _prototype(serializer_class: type[BaseSerializer], partial: bool = False) -> BaseSerializer:
    return serializer_class(partial=partial)


def validated(serializer_class: type[BaseSerializer], data, *, partial: bool = False) -> dict:
    """The validated body, or a 400 naming every bad field (unknown ones included)."""
    try:
        return _prototype(serializer_class, partial).run_validation(data)
    except exceptions.ValidationError as exc:
        raise exceptions.ValidationError(as_serializer_error(exc)) from None


def represented(serializer_class: type[BaseSerializer], instance) -> dict:
    """``instance`` (an object or a mapping) as ``serializer_class`` declares it: nothing more."""
    return _prototype(serializer_class).to_representation(instance)


def represented_list(serializer_class: type[BaseSerializer], instances) -> list[dict]:
    prototype = _prototype(serializer_class)
    return [prototype.to_representation(instance) for instance in instances]


# Output fields whose `to_representation` gives back a value as the database returns it for the
# model field behind it (str, int, bool, decoded JSON): `represented_rows` skips the call.
_AS_STORED = (fields.CharField, fields.ChoiceField, fields.IntegerField, fields.BooleanField)
# orjson reads an integer beyond 64 bits as a float; such text goes through `json`, which keeps it exact.
_LONG_INTEGER = re.compile(r"\d{19}")
# The same in a document of many values, where digits inside strings (a source's sha256) are common:
# in JSON a number begins after "[", "," or ":" (and spaces), which a string's digits seldom follow.
# A match inside a string only costs the slower path.
_LONG_NUMBER_TOKEN = re.compile(r"[\[,:]\s*-?\d{19}")
# Every ASCII digit read as "0" and every other byte as a space: with it, "19 digits in a row?" is a translation and a
# substring search, about twenty times faster than either pattern over a long document (measured).
_DIGITS_ONLY = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))


def _may_hold_long_integer(document: str) -> bool:
    """Whether a JSON document may hold an integer that orjson would read as a float."""
    if b"0" * 19 not in document.encode(errors="surrogatepass").translate(_DIGITS_ONLY):
        return False
    return _LONG_NUMBER_TOKEN.search(document) is not None


def _json_loads(text):
    """What Django's JSONField gives for a column's text, decoded by orjson (several times faster
    than ``json`` on evaluation metadata, profiled): a long run's detail decodes thousands of these."""
    if text is None or not isinstance(text, str):
        return text
    if len(text) < 19 or not _LONG_INTEGER.search(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # as JSONField.from_db_value


@cache
def _row_plan(serializer_class: type[ModelSerializer]) -> tuple[tuple[str, str, object], ...]:
    """(output name, model attname, how to convert its value) for each field: None for a value
    used as the database gives it, ``_json_loads`` for a JSON column read as its text, else the
    output field."""
    model = serializer_class.Meta.model
    plan = []
    for field in _prototype(serializer_class)._readable_fields:
        try:
            if len(field.source_attrs) != 1:
                raise FieldDoesNotExist(field.source)
            column = model._meta.get_field(field.source)
        except FieldDoesNotExist:
            name = f"{serializer_class.__name__}.{field.field_name}"
            raise ImproperlyConfigured(f"{name} is not a model column.") from None
        as_json = isinstance(field, fields.JSONField) and not field.binary
        if as_json and isinstance(column, models.JSONField) and column.decoder is None:
            plan.append((field.field_name, column.attname, _json_loads))
        elif as_json or isinstance(field, _AS_STORED):
            plan.append((field.field_name, column.attname, None))
        else:
            plan.append((field.field_name, column.attname, field))
    return tuple(plan)


def _converter(field):
    """``field.to_representation``, or for an ISO 8601 datetime the same string with the field's
    time zone looked up once per list, not per value (half the cost of a datetime, measured)."""
    if not isinstance(field, fields.Field):
        return field
    if not isinstance(field, fields.DateTimeField):
        return field.to_representation
    if str(getattr(field, "format", api_settings.DATETIME_FORMAT)).lower() != ISO_8601:
        return field.to_representation
    zone = field.timezone if hasattr(field, "timezone") else field.default_timezone()
    if zone is None:
        return field.to_representation

    def iso(value):
        if value.tzinfo is None:
            return field.to_representation(value)
        text = (value if value.tzinfo is zone else value.astimezone(zone)).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    iso.same_for_equal_values = True
    return iso


def _converted_column(values: tuple, convert) -> list:
    """One column's values converted (None stays None).

    JSON columns are decoded as one document (`_json_column`). A datetime column is converted once
    per distinct value: every evaluation of a decision shares its ``created_at``, so a run's
    evaluations hold about a sixth as many timestamps as rows. Only where equal values give equal
    text (two aware datetimes that are equal are the same instant, written in one zone): not for
    numbers, where 0.0 == -0.0 and 1 == True.
    """
    if convert is _json_loads:
        return _json_column(values)
    if getattr(convert, "same_for_equal_values", False):
        done: dict = {}
        return [None if v is None else done[v] if v in done else done.setdefault(v, convert(v)) for v in values]
    return [None if value is None else convert(value) for value in values]


def _json_column(values: tuple) -> list:
    """A JSON column's texts decoded as ``_json_loads`` decodes each, in one orjson call: 726
    evaluations' metadata took 1.3 ms one by one (a call and a pattern search each), profiled.

    SQL NULL and JSON ``null`` both read as None, so a NULL joins the document as ``null``. Where
    one text alone would take another path (an integer beyond 64 bits, text orjson refuses) or the
    texts do not make one value each, every text is decoded on its own as before.
    """
    if any(not (value is None or isinstance(value, str)) for value in values):
        return [_json_loads(value) for value in values]
    document = "[" + ",".join("null" if value is None else value for value in values) + "]"
    if not _may_hold_long_integer(document):
        try:
            decoded = orjson.loads(document)
        except orjson.JSONDecodeError:
            pass
        else:
            if len(decoded) == len(values):
                return decoded
    return [None if value is None else _json_loads(value) for value in values]


def represented_rows(serializer_class: type[ModelSerializer], queryset) -> list[dict]:
    """The same dicts as ``represented_list`` over ``queryset``, read as tuples: no model
    instances, no field calls for values the database already gives in their JSON form, and JSON
    columns read as text and decoded by orjson.

    For long lists of flat model serializers (every field a column): the evaluations of a run
    read over the API took three quarters of that answer's time through the model and the
    serializer's per-field calls (docs/benchmarks.md, bench/load.py).
    """
    plan = _row_plan(serializer_class)
    names = [name for name, _, _ in plan]
    as_text = {f"_{column}_text": Cast(column, models.TextField()) for _, column, how in plan if how is _json_loads}
    selected = [f"_{column}_text" if how is _json_loads else column for _, column, how in plan]
    converted = [(i, _converter(how)) for i, (_, _, how) in enumerate(plan) if how is not None]
    rows = list(queryset.annotate(**as_text).values_list(*selected))
    if not rows:
        return []
    # Column by column: one call per converted column, not a loop over every cell.
    columns = list(zip(*rows, strict=True))
    for i, convert in converted:
        columns[i] = _converted_column(columns[i], convert)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def known_query(request, allowed) -> None:
    """A 400 naming each query parameter the endpoint does not know (``allowed``), as for bodies:
    a misspelt parameter (``?sinse=``) would otherwise be ignored and answer every row."""
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise exceptions.ValidationError({key: ["Unknown query parameter."] for key in unknown})


PAGE_PARAMETERS = ("cursor", "page_size")


def filtered(filterset_class, request, queryset, *, also: tuple[str, ...] = PAGE_PARAMETERS):
    """The rows a list's query string selects through its FilterSet (the one the page and export use).

    As with bodies, a parameter the endpoint does not know is a 400 naming it, not silently ignored: a
    misspelt filter would otherwise answer every row.
    """
    known_query(request, {*filterset_class.base_filters, *also})
    # A dashboard form sends empty fields for filters left unset; an API client that names a filter
    # means it, so an empty value is refused rather than read as "no filter".
    empty = sorted(key for key, values in request.query_params.lists() if any(v == "" for v in values))
    if empty:
        raise exceptions.ValidationError({key: ["Must not be empty."] for key in empty})
    filters = filterset_class(request.query_params, queryset=queryset, request=request)
    if not filters.is_valid():
        raise exceptions.ValidationError(filters.errors)
    return filters.qs
