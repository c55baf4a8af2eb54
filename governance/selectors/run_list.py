"""The runs list: filtered (RunFilter), sorted by any of its columns, keyset-paginated.

Newest first (the default) pages both ways by id, as every list does (`lists.keyset_page`). A sort by
a column pages forward from a cursor holding the last row's (segment, value, id): no OFFSET, no
COUNT, each page a range scan of a `(tenant, column, id)` index (governance.models.Run.Meta).

A sort is read as segments, one query each, concatenated: a column that may be empty (no report
yet, still running) is its rows with a value in order, then the empty ones newest first, whichever
way it is sorted; the final action is its three values in order of severity, each newest first (an
index range scan per action, as the violations list reads warns and blocks).
"""

import base64
import binascii
import json
import math
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime

from ..filters import RunFilter
from ..models import Action, Run
from .lists import PAGE_SIZE, KeysetPage, keyset_page

RUN_COLUMNS = (
    "id",
    "agent_name",
    "workflow_name",
    "status",
    "final_action",
    "started_at",
    "ended_at",
    "report_count",
    "worst_score",
    "judge_cost",
    "duration_ms",
)


@dataclass(frozen=True)
class Sort:
    key: str  # as written in ?sort= (with a leading "-" for descending)
    label: str
    column: str
    nullable: bool = False
    ranked: tuple[str, ...] = ()  # a column of a few values, ordered by these (ascending)
    default_descending: bool = False  # what a first click on the column asks for


SORTS = {
    s.key: s
    for s in (
        Sort(
            "action",
            "Final action",
            "final_action",
            ranked=(Action.ALLOW, Action.WARN, Action.BLOCK),
            default_descending=True,
        ),
        Sort("score", "Worst score", "worst_score", nullable=True),
        Sort("reports", "Reports", "report_count", default_descending=True),
        Sort("duration", "Duration", "duration_ms", nullable=True, default_descending=True),
        Sort("cost", "Judge cost", "judge_cost", default_descending=True),
        Sort("agent", "Agent", "agent_name"),
        Sort("workflow", "Workflow", "workflow_name"),
        Sort("started", "Started", "started_at", default_descending=True),
    )
}
DEFAULT_SORT = "-started"
# Every ?sort= the page's headers and the API accept: a key, ascending, or "-" and the key, descending.
SORT_VALUES = tuple(value for key in SORTS for value in (key, f"-{key}"))
# What a cursor's value must be for each sorted column: anything else is a tampered cursor.
_TEXT_COLUMNS = {"agent_name", "workflow_name", "started_at"}
_INT_COLUMNS = {"report_count", "duration_ms"}


def parse_sort(value) -> tuple[Sort | None, bool]:
    """(sort, descending) from ?sort=; None for the default (newest first) or anything unknown."""
    value = (value or "").strip()
    descending = value.startswith("-")
    sort = SORTS.get(value.removeprefix("-"))
    if sort is None or (sort.key == "started" and descending):
        return None, True  # newest first is the id order, which pages both ways
    return sort, descending


@dataclass
class SortedPage:
    rows: list
    next_key: tuple[int, object, int] | None = None  # the last row's (segment, value, id), when more follow
    first: bool = True  # no cursor was given

    @property
    def next_cursor(self) -> str | None:
        return encode_cursor(*self.next_key) if self.next_key else None

    @property
    def has_other_pages(self) -> bool:
        return self.next_key is not None or not self.first


def cursor_json(segment: int, value, pk: int) -> bytes:
    """A cursor's content, before the page (URL-safe) or the API (standard base64) encodes it."""
    if hasattr(value, "isoformat"):
        value = value.isoformat()
    return json.dumps([segment, value, pk], separators=(",", ":")).encode()


def encode_cursor(segment: int, value, pk: int) -> str:
    return base64.urlsafe_b64encode(cursor_json(segment, value, pk)).decode().rstrip("=")


def decode_cursor(token, sort: Sort) -> tuple[int, object, int] | None:
    """The cursor's (segment, value, id), or None for a missing or tampered one (the first page)."""
    if not token:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, TypeError, binascii.Error):
        return None
    return cursor_key(raw, sort)


def _value_fits(column: str, value) -> bool:
    """Whether a cursor's value can be compared with the column (a tampered one could make the query fail)."""
    if value is None or column == "final_action":  # the final action pages by id alone
        return True
    if isinstance(value, bool):
        return False
    if column in _TEXT_COLUMNS:
        return isinstance(value, str) and "\x00" not in value
    if column in _INT_COLUMNS:
        return isinstance(value, int) and abs(value) < 2**63
    return isinstance(value, (int, float)) and math.isfinite(value) and abs(value) < 2**63


def cursor_key(raw: bytes, sort: Sort) -> tuple[int, object, int] | None:
    """A decoded cursor's (segment, value, id) for this sort, or None when it is not one."""
    try:
        segment, value, pk = json.loads(raw)
    except (ValueError, TypeError):
        return None
    if not (isinstance(segment, int) and isinstance(pk, int) and 0 < pk < 2**63 and 0 <= segment < 3):
        return None
    if type(segment) is bool or type(pk) is bool or not _value_fits(sort.column, value):
        return None
    if sort.column == "started_at" and value is not None:
        try:
            value = parse_datetime(value)
        except ValueError:  # well formed, not a date: 2026-13-45T00:00
            return None
        if value is None or value.tzinfo is None:
            return None
    return segment, value, pk


def _segments(sort: Sort, descending: bool) -> list[tuple[Q, tuple[str, ...], bool]]:
    """Each segment: (its rows, its order, whether it is ordered by the column)."""
    newest = ("-id",)
    if sort.ranked:
        values = sort.ranked[::-1] if descending else sort.ranked
        return [(Q(**{sort.column: v}), newest, False) for v in values]
    sign = "-" if descending else ""
    order = (f"{sign}{sort.column}", f"{sign}id")
    if sort.nullable:
        return [
            (Q(**{f"{sort.column}__isnull": False}), order, True),
            (Q(**{f"{sort.column}__isnull": True}), newest, False),
        ]
    return [(Q(), order, True)]


def _after(column: str, descending: bool, value, pk: int, by_column: bool) -> Q:
    if not by_column:
        return Q(id__lt=pk)
    further, same = ("lt", "lte") if descending else ("gt", "gte")
    # The inclusive bound first: it is what lets the index scan start at the value.
    return Q(**{f"{column}__{same}": value}) & (Q(**{f"{column}__{further}": value}) | Q(**{f"id__{further}": pk}))


def sorted_page(
    queryset: QuerySet, sort: Sort, descending: bool, cursor: tuple[int, object, int] | None, size: int = PAGE_SIZE
) -> SortedPage:
    """A page of rows in this sort after ``cursor`` (a decoded one; None for the first page)."""
    segments = _segments(sort, descending)
    start = cursor[0] if cursor else 0
    rows: list = []
    for n in range(start, len(segments)):
        where, order, by_column = segments[n]
        part = queryset.filter(where)
        if cursor and n == start:
            part = part.filter(_after(sort.column, descending, cursor[1], cursor[2], by_column))
        found = list(part.order_by(*order)[: size + 1 - len(rows)])
        rows += [(n, row) for row in found]
        if len(rows) > size:
            break
    next_key = None
    if len(rows) > size:
        n, row = rows[size - 1]
        next_key = (n, getattr(row, sort.column), row.pk)
    return SortedPage(rows=[row for _, row in rows[:size]], next_key=next_key, first=cursor is None)


def run_list(*, tenant, data, before=None, after=None) -> tuple[RunFilter, KeysetPage | SortedPage]:
    fs = RunFilter(data, queryset=Run.objects.filter(tenant=tenant))
    if not fs.is_valid():
        return fs, KeysetPage(rows=[])
    qs = fs.qs.only(*RUN_COLUMNS)
    sort, descending = parse_sort(data.get("sort"))
    if sort is None:
        return fs, keyset_page([qs], before=before, after=after)
    return fs, sorted_page(qs, sort, descending, decode_cursor(data.get("cursor"), sort))
