"""Streaming CSV / JSON Lines exports in constant memory.

Rows are read in keyset-paginated chunks (id > last id) rather than one cursor, so memory stays
flat however many rows match and no transaction is held open while a slow client downloads.
The tenant scope is re-entered inside the generator: it runs after the view has returned.
"""

import csv
import io
import json
from collections.abc import Callable, Iterator
from datetime import datetime

from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from django.utils import timezone
from django_scopes import scope

CHUNK = 2000
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}


def iter_rows(queryset, *, chunk: int = CHUNK) -> Iterator:
    last = None
    base = queryset.order_by("id")
    while True:
        page = base.filter(id__gt=last) if last is not None else base
        rows = list(page[:chunk])
        if not rows:
            return
        yield from rows
        last = rows[-1].id


class _Encoder(DjangoJSONEncoder):
    """Full-precision timestamps, as in the CSV: DjangoJSONEncoder cuts them to milliseconds, so a
    JSON Lines export no longer matched its rows (or the CSV of the same rows)."""

    def default(self, o):
        if isinstance(o, datetime):
            return o.isoformat()
        return super().default(o)


def _cell(value):
    if isinstance(value, (dict, list)):
        return json.dumps(value, cls=_Encoder, separators=(",", ":"), sort_keys=True)
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _csv_safe(value):
    # Spreadsheet formula injection: a cell an agent controls must not start a formula.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def stream(*, tenant, queryset, columns: list[str], row: Callable[[object], dict], fmt: str) -> Iterator[str]:
    with scope(tenant=tenant):
        if fmt == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow(columns)
            for obj in iter_rows(queryset):
                data = row(obj)
                writer.writerow([_csv_safe(_cell(data.get(c))) for c in columns])
                if buffer.tell() > 64 * 1024:
                    yield buffer.getvalue()
                    buffer.seek(0)
                    buffer.truncate()
            yield buffer.getvalue()
        else:
            lines = []
            for obj in iter_rows(queryset):
                lines.append(json.dumps(row(obj), cls=_Encoder, separators=(",", ":")))
                if len(lines) >= 500:
                    yield "\n".join(lines) + "\n"
                    lines = []
            if lines:
                yield "\n".join(lines) + "\n"


def export_response(*, tenant, queryset, columns, row, fmt: str, basename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        stream(tenant=tenant, queryset=queryset, columns=columns, row=row, fmt=fmt), content_type=FORMATS[fmt]
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="{basename}-{stamp}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response


EVALUATION_COLUMNS = [
    "id",
    "created_at",
    "run_id",
    "agent_name",
    "policy_id",
    "policy_name",
    "policy_version",
    "category",
    "phase",
    "action",
    "reason",
    "metadata",
    "source",
    "review_state",
    "reviewed_at",
    "review_comment",
]


def evaluation_row(e) -> dict:
    return {
        "id": e.id,
        "created_at": e.created_at,
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
        "reviewed_at": e.reviewed_at,
        "review_comment": e.review_comment,
    }


AUDIT_COLUMNS = [
    "id",
    "created_at",
    "action",
    "actor",
    "request_id",
    "object_type",
    "object_id",
    "object_repr",
    "before",
    "after",
]


def audit_row(a) -> dict:
    return {
        "id": a.id,
        "created_at": a.created_at,
        "action": a.action,
        "actor": a.actor_label,
        "request_id": a.request_id,
        "object_type": a.object_type,
        "object_id": a.object_id,
        "object_repr": a.object_repr,
        "before": a.before,
        "after": a.after,
    }
