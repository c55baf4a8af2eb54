"""Streaming CSV / JSON Lines exports in constant memory, at database speed on PostgreSQL.

Rows are read in keyset chunks (id > last id, CHUNK rows at a time), so memory stays flat however
many rows match and no statement stays open while a slow client downloads: each chunk is read
whole, then handed to the client. An interrupted download resumes with `after_id` (the last id
received): the same rows follow, in the same order.

On PostgreSQL each chunk is one `COPY (SELECT …) TO STDOUT`: the database formats every cell
(timestamps as Python's isoformat, JSON as JSON, the spreadsheet-formula guard) and Python only
passes the bytes on. That keeps an export within a small factor of a bare COPY (bench/export.py
measures it). Elsewhere (SQLite) the same columns are formatted in Python from `values_list`
tuples; both paths write the same cells, with "\\n" line ends as COPY does.

The export reads from the connection the view was routed to (core.routing: the replica when one
is configured): the generator runs after the view returned, so the alias is fixed beforehand.
The tenant scope is re-entered inside the generator for the same reason.
"""

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connections
from django.db.models import TextField
from django.db.models.expressions import RawSQL
from django.http import StreamingHttpResponse
from django.utils import timezone
from django_scopes import scope

from core.routing import read_alias

CHUNK = 10_000  # rows per keyset chunk: a few MB of CSV held at once at ~350 bytes a row
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Column:
    name: str  # as exported
    field: str  # the model field (attname) it comes from
    kind: str  # "int", "bool", "text" (formula-guarded in CSV), "time" (isoformat) or "json"


@dataclass(frozen=True)
class ExportSpec:
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


EVALUATIONS = ExportSpec(
    (
        Column("id", "id", "int"),
        Column("created_at", "created_at", "time"),
        Column("run_id", "run_id", "int"),
        Column("agent_name", "agent_name", "text"),
        Column("policy_id", "policy_ref", "int"),
        Column("policy_name", "policy_name", "text"),
        Column("policy_version", "policy_version", "int"),
        Column("category", "category", "text"),
        Column("phase", "phase", "text"),
        Column("action", "action", "text"),
        Column("reason", "reason", "text"),
        Column("metadata", "metadata", "json"),
        Column("source", "source", "text"),
        Column("shadow", "shadow", "bool"),
        Column("review_state", "review_state", "text"),
        Column("reviewed_at", "reviewed_at", "time"),
        Column("review_comment", "review_comment", "text"),
    )
)
AUDIT = ExportSpec(
    (
        Column("id", "id", "int"),
        Column("created_at", "created_at", "time"),
        Column("action", "action", "text"),
        Column("actor", "actor_label", "text"),
        Column("request_id", "request_id", "text"),
        Column("object_type", "object_type", "text"),
        Column("object_id", "object_id", "text"),
        Column("object_repr", "object_repr", "text"),
        Column("before", "before", "json"),
        Column("after", "after", "json"),
        # tenant_id, seq, prev_hash and hash let an auditor re-check the chain offline (tenants/chain.py).
        Column("tenant_id", "tenant_id", "int"),
        Column("seq", "seq", "int"),
        Column("prev_hash", "prev_hash", "text"),
        Column("hash", "hash", "text"),
    )
)
EVALUATION_COLUMNS = EVALUATIONS.names
AUDIT_COLUMNS = AUDIT.names


# --- PostgreSQL: COPY per keyset chunk ------------------------------------------------------


def _sql_time(col: str) -> str:
    # Python's isoformat of an aware UTC datetime: microseconds only when there are some.
    return (
        f"to_char({col} AT TIME ZONE 'UTC', CASE WHEN mod(date_part('microseconds', {col})::bigint, 1000000) = 0 "
        'THEN \'YYYY-MM-DD"T"HH24:MI:SS"+00:00"\' ELSE \'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"\' END)'
    )


def _sql_formula_guard(col: str) -> str:
    return f"CASE WHEN left({col}, 1) IN ('=', '+', '-', '@', E'\\t', E'\\r') THEN '''' || {col} ELSE {col} END"


def _sql_cell(column: Column, table: str, fmt: str, quote) -> str:
    col = f"{quote(table)}.{quote(column.field)}"
    if column.kind == "time":
        return _sql_time(col)
    if fmt == "csv":
        return {
            "int": col,
            "bool": f"CASE WHEN {col} THEN 'true' ELSE 'false' END",
            "text": _sql_formula_guard(col),
            "json": f"{col}::text",
        }[column.kind]
    return col


def _copy_sql(queryset, spec: ExportSpec, fmt: str, alias: str) -> tuple[str, tuple]:
    connection = connections[alias]
    quote = connection.ops.quote_name
    table = queryset.model._meta.db_table
    cells = {
        f"c{i}": RawSQL(_sql_cell(c, table, fmt, quote), (), output_field=TextField())
        for i, c in enumerate(spec.columns)
    }
    select = queryset.annotate(**cells).values_list("id", *cells).order_by("id")
    sql, params = select.query.sql_with_params()
    # Selected from a subquery so that nothing Django adds to the inner list (the ordering column of
    # a DISTINCT, which a multiple-choice filter asks for) reaches the file.
    named = ", ".join(f"export.{key} AS {quote(c.name)}" for key, c in zip(cells, spec.columns, strict=True))
    sql = f"SELECT {named} FROM ({sql}) AS export ORDER BY export.id"
    if fmt == "csv":
        return f"COPY ({sql}) TO STDOUT (FORMAT csv)", params
    # row_to_json is the fastest JSON PostgreSQL writes (about twice json_build_object's speed). JSON
    # text never holds a raw control character (PostgreSQL escapes them), so with these two as quote
    # and delimiter COPY writes each object verbatim, one a line.
    sql = f"SELECT row_to_json(line)::text FROM ({sql}) AS line"
    return f"COPY ({sql}) TO STDOUT (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')", params


def _chunk_bounds(queryset, alias: str, after_id: int | None, chunk: int) -> Iterator[tuple[int | None, int | None]]:
    """(after, upto) id ranges of `chunk` matching rows each; upto None for the last one."""
    ordered = queryset.using(alias).order_by("id").values_list("id", flat=True)
    last = after_id
    while True:
        remaining = ordered.filter(id__gt=last) if last is not None else ordered
        upto = remaining[chunk - 1 : chunk].first()
        yield last, upto
        if upto is None:
            return
        last = upto


def _copy_stream(queryset, spec: ExportSpec, fmt: str, alias: str, after_id: int | None, chunk: int) -> Iterator[bytes]:
    connection = connections[alias]
    for lower, upper in _chunk_bounds(queryset, alias, after_id, chunk):
        part = queryset
        if lower is not None:
            part = part.filter(id__gt=lower)
        if upper is not None:
            part = part.filter(id__lte=upper)
        sql, params = _copy_sql(part, spec, fmt, alias)
        # Read the whole chunk before handing it on, so the statement ends at database speed whatever
        # the client's; libpq hands COPY over a row at a time, the client gets one write per chunk.
        data = bytearray()
        with connection.cursor() as cursor, cursor.cursor.copy(sql, params) as copy:
            for block in copy:
                data += block
        if data:
            yield bytes(data)


# --- Elsewhere: the same cells, formatted in Python ----------------------------------------


class _Encoder(DjangoJSONEncoder):
    """Full-precision timestamps, as in the CSV: DjangoJSONEncoder cuts them to milliseconds, so a
    JSON Lines export no longer matched its rows (or the CSV of the same rows)."""

    def default(self, o):
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


def _csv_cell(kind: str, value):
    if value is None:
        return ""
    if kind == "time":
        return value.isoformat()
    if kind == "bool":
        return "true" if value else "false"
    if kind == "json":
        return json.dumps(value, cls=_Encoder, separators=(",", ":"), sort_keys=True)
    if kind == "text" and value[:1] in FORMULA_STARTS:
        # Spreadsheet formula injection: a cell an agent controls must not start a formula.
        return "'" + value
    return value


def _json_value(kind: str, value):
    return value.isoformat() if kind == "time" and value is not None else value


def _python_chunks(queryset, spec: ExportSpec, alias: str, after_id: int | None, chunk: int) -> Iterator[list]:
    rows = queryset.using(alias).order_by("id").values_list(*[c.field for c in spec.columns])
    last = after_id
    while True:
        page = list((rows.filter(id__gt=last) if last is not None else rows)[:chunk])
        if not page:
            return
        yield page
        last = page[-1][0]


def _python_stream(
    queryset, spec: ExportSpec, fmt: str, alias: str, after_id: int | None, chunk: int
) -> Iterator[bytes]:
    kinds = [c.kind for c in spec.columns]
    names = spec.names
    for page in _python_chunks(queryset, spec, alias, after_id, chunk):
        if fmt == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer, lineterminator="\n")
            writer.writerows([[_csv_cell(k, v) for k, v in zip(kinds, row, strict=True)] for row in page])
            yield buffer.getvalue().encode()
        else:
            lines = [
                json.dumps(
                    {n: _json_value(k, v) for n, k, v in zip(names, kinds, row, strict=True)},
                    cls=_Encoder,
                    separators=(",", ":"),
                )
                for row in page
            ]
            yield ("\n".join(lines) + "\n").encode()


# --- The response --------------------------------------------------------------------------


def stream(
    *, tenant, queryset, spec: ExportSpec, fmt: str, alias: str, after_id: int | None = None, chunk: int = CHUNK
) -> Iterator[bytes]:
    with scope(tenant=tenant):
        if fmt == "csv":
            yield (",".join(spec.names) + "\n").encode()
        if connections[alias].vendor == "postgresql":
            yield from _copy_stream(queryset, spec, fmt, alias, after_id, chunk)
        else:
            yield from _python_stream(queryset, spec, fmt, alias, after_id, chunk)


def export_response(
    *, tenant, queryset, spec: ExportSpec, fmt: str, basename: str, after_id: int | None = None
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        stream(tenant=tenant, queryset=queryset, spec=spec, fmt=fmt, alias=read_alias(), after_id=after_id),
        content_type=FORMATS[fmt],
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="{basename}-{stamp}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response
