"""The rows of long answers, kept per process and keyed by their version.

A run's detail answers every report and evaluation of the run (docs/api.md): a shared run read
while agents keep reporting into it is mostly rows this process has already turned into dicts.
Building them again was most of that answer's cost (bench/mix.py, ``run_read``), and it grows with
the run. Here each row's finished dict is kept under (what built it, its id, its version), so a read
costs one narrow query for the ids and versions, and the full columns only of rows not seen before;
and a list that only grew since it was last answered costs one statement that says so (a digest of
the rows answered) and names the rows that came after them (``cached_rows``).

The version is PostgreSQL's ``xmin`` (the transaction that wrote this version of the row) with its
``ctid`` (where the version lies). Any change to a row (a review, a data migration, a fix by hand in
SQL) writes a new version: a later transaction's gets a new ``xmin``, and one transaction's
successive versions of a row each lie elsewhere, so a changed row is never answered from here. An
id used again after a rollback comes with another transaction's ``xmin``; a table rewritten by
``VACUUM FULL`` moves its rows, which only costs building them again. A physical replica has its
primary's ``xmin`` and ``ctid``. Other databases have neither: there every read builds its rows
(``represented_rows``).

The dicts are shared by every request of the process: callers read them, never change them.
``ROW_CACHE_BYTES`` bounds what a process keeps (the rows' JSON size, least recently used first
out; a kept list weighs what its rows weigh, so the bound holds however the two overlap); 0 turns
the cache off.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import orjson
from django.conf import settings
from django.db import connections
from django.db.models import F, QuerySet
from django.db.models.expressions import RawSQL

# The annotations a row's version and its position in a list are read under.
VERSION = "_row_version"
POSITION = "_row_position"

# (rows as dicts, and per row its (id, version) when asked for them): what builds a kind of row.
Reader = Callable[[QuerySet, tuple[str, ...]], tuple[list[dict], list[tuple]]]


class RowCache:
    """A bounded, thread-safe map of finished row dicts, least recently used evicted first."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._rows: OrderedDict[Hashable, tuple[dict, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def get_many(self, keys: list[Hashable]) -> dict[Hashable, dict]:
        return {key: row for key, (row, _) in self.get_sized(keys).items()}

    def get_sized(self, keys: list[Hashable]) -> dict[Hashable, tuple]:
        """What is kept under each of ``keys``, with its weight."""
        found = {}
        with self._lock:
            for key in keys:
                entry = self._rows.get(key)
                if entry is not None:
                    self._rows.move_to_end(key)
                    found[key] = entry
        return found

    def put_many(self, items: list[tuple[Hashable, dict]]) -> list[int]:
        """Keep each row under its key, weighed by its JSON's size; answers the weights."""
        weighed = [(key, row, _size(row)) for key, row in items]
        self.put_sized(weighed)
        return [size for _, _, size in weighed]

    def put_sized(self, items: list[tuple[Hashable, object, int]]) -> None:
        with self._lock:
            for key, value, size in items:
                old = self._rows.pop(key, None)
                if old is not None:
                    self.bytes -= old[1]
                if size > self.max_bytes:
                    continue
                self._rows[key] = (value, size)
                self.bytes += size
            while self.bytes > self.max_bytes and self._rows:
                _, (_, size) = self._rows.popitem(last=False)
                self.bytes -= size

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self.bytes = 0


def _size(row: dict) -> int:
    """A row's weight: its JSON's length, what the answer carries of it (the dicts themselves take
    about three times that in memory)."""
    try:
        return len(orjson.dumps(row, default=str)) + 100
    except TypeError:  # what orjson refuses (an integer beyond 64 bits) the renderer writes with json
        return len(json.dumps(row, default=str)) + 100


_CACHE = RowCache(0)


def row_cache() -> RowCache:
    """The process's cache, sized by ``ROW_CACHE_BYTES`` (read again when a test changes it)."""
    limit = settings.ROW_CACHE_BYTES
    if _CACHE.max_bytes != limit:
        _CACHE.max_bytes = limit
        _CACHE.clear()
    return _CACHE


def versioned(queryset: QuerySet) -> QuerySet:
    """``queryset`` with each row's version under ``VERSION``: its ``xmin`` and ``ctid``, as text."""
    table = connections[queryset.db].ops.quote_name(queryset.model._meta.db_table)
    return queryset.annotate(**{VERSION: RawSQL(f"{table}.xmin::text || {table}.ctid::text", ())})


def _usable(queryset: QuerySet) -> bool:
    return settings.ROW_CACHE_BYTES > 0 and connections[queryset.db].vendor == "postgresql"


@dataclass(frozen=True)
class _Listed:
    """A list as this process last answered it: its rows up to position ``upto`` (all of them), the
    digest of their positions and versions, the rows in order, and their weight."""

    upto: int
    digest: str
    rows: tuple
    size: int


def _digest(listing: list[tuple]) -> str:
    """What PostgreSQL's ``md5(string_agg(position || ':' || version, ',' ORDER BY position))`` gives."""
    return hashlib.md5(",".join(f"{p}:{v}" for p, _, v in listing).encode(), usedforsecurity=False).hexdigest()


def _listing(queryset: QuerySet) -> QuerySet:
    """(position, id, version) of each row, in the list's order (one column that grows)."""
    (position,) = queryset.query.order_by
    return versioned(queryset).annotate(**{POSITION: F(position)}).values_list(POSITION, "id", VERSION)


def _appended(listing_sql: tuple[str, tuple], alias: str, memo: _Listed) -> tuple[list[tuple], str] | None:
    """The rows after ``memo.upto`` as (position, id, version) and the digest of the whole list, or
    None when a row up to it changed, went or came (a transaction that committed late). One
    statement, so one snapshot."""
    sql, params = listing_sql
    item = "l.p::text || ':' || l.v"
    statement = (
        f"SELECT md5(string_agg({item}, ',' ORDER BY l.p) FILTER (WHERE l.p <= %s)),"
        f" md5(string_agg({item}, ',' ORDER BY l.p)),"
        " array_agg(l.p ORDER BY l.p) FILTER (WHERE l.p > %s),"
        " array_agg(l.i ORDER BY l.p) FILTER (WHERE l.p > %s),"
        " array_agg(l.v ORDER BY l.p) FILTER (WHERE l.p > %s)"
        f" FROM ({sql}) AS l (p, i, v)"
    )
    with connections[alias].cursor() as cursor:
        cursor.execute(statement, (*[memo.upto] * 4, *params))  # in the order they appear
        before, whole, positions, ids, versions = cursor.fetchone()
    if before != memo.digest:
        return None
    return list(zip(positions or (), ids or (), versions or (), strict=True)), whole


def _rows_of(kind: str, queryset: QuerySet, read: Reader, listing: list[tuple], cache: RowCache, *, whole: bool):
    """(rows, weights) of the rows ``listing`` names (``whole``: every row of ``queryset``), in its
    order: kept ones from the cache, the others read (and kept). A row that went between the two
    queries is left out, as a read one moment later would; one that changed is answered as read,
    kept under the version it was read with."""
    keys = [(kind, pk, version) for _, pk, version in listing]
    found = cache.get_sized(keys)
    fresh: dict[int, tuple] = {}
    if len(found) < len(keys):
        missing = [key[1] for key in keys if key not in found]
        todo = queryset if whole and not found else queryset.filter(pk__in=missing)
        rows, ids = read(versioned(todo), ("id", VERSION))
        sizes = cache.put_many([((kind, pk, version), row) for row, (pk, version) in zip(rows, ids, strict=True)])
        fresh = {pk: (row, size) for row, (pk, _), size in zip(rows, ids, sizes, strict=True)}
    rows, weights = [], []
    for key in keys:
        entry = found.get(key) or fresh.get(key[1])
        if entry is not None:
            rows.append(entry[0])
            weights.append(entry[1])
    return rows, weights


def cached_rows(kind: str, queryset: QuerySet, read: Reader) -> list[dict]:
    """The rows ``read`` builds from ``queryset``, in its order, each built once per version.

    ``kind`` names what ``read`` builds (rows of one table built two ways are two kinds). ``read``
    is given a queryset and the extra columns to read with each row (``("id", VERSION)``), and
    answers the dicts and those columns' values, from one query. ``queryset`` is a list that rows
    are added to, ordered by one column that grows with them (an id, a sequence number).

    The list as answered is kept too, under its query. A later read of the same query asks
    PostgreSQL, in one statement, whether the rows up to the last position answered are still those
    versions (a digest) and which rows came after it: a list that only grew costs its new rows, not
    its length. A row that changed, went, or landed among the earlier ones (a transaction that
    committed late) changes the digest, and the list is read again row by row.
    """
    if not _usable(queryset):
        return read(queryset, ())[0]
    cache = row_cache()
    listing_query = _listing(queryset)
    listing_sql = listing_query.query.get_compiler(using=queryset.db).as_sql()
    memo_key = ("listed", kind, queryset.db, listing_sql[0], tuple(listing_sql[1]))
    memo = cache.get_many([memo_key]).get(memo_key)
    if isinstance(memo, _Listed):
        found = _appended(listing_sql, queryset.db, memo)
        if found is not None:
            appended, digest = found
            if not appended:
                return list(memo.rows)
            rows, sizes = _rows_of(kind, queryset, read, appended, cache, whole=False)
            if len(rows) == len(appended):
                grown = _Listed(appended[-1][0], digest, memo.rows + tuple(rows), memo.size + sum(sizes))
                cache.put_sized([(memo_key, grown, grown.size)])
            return [*memo.rows, *rows]
    listing = list(listing_query)
    rows, sizes = _rows_of(kind, queryset, read, listing, cache, whole=True)
    if rows and len(rows) == len(listing):
        listed = _Listed(listing[-1][0], _digest(listing), tuple(rows), sum(sizes) + 100)
        cache.put_sized([(memo_key, listed, listed.size)])
    return rows
