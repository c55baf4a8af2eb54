"""The rows of long answers, kept per process and keyed by their version.

A run's detail answers every report and evaluation of the run (README "API"): a shared run read
while agents keep reporting into it is mostly rows this process has already turned into dicts.
Building them again was most of that answer's cost (bench/mix.py, ``run_read``), and it grows with
the run. Here each row's finished dict is kept under (what built it, its id, its version), so a read
costs one narrow query for the ids and versions, and the full columns only of rows not seen before.

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
out); 0 turns the cache off.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import orjson
from django.conf import settings
from django.db import connections
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

# The annotation a row's version is read under.
VERSION = "_row_version"

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
        found = {}
        with self._lock:
            for key in keys:
                entry = self._rows.get(key)
                if entry is not None:
                    self._rows.move_to_end(key)
                    found[key] = entry[0]
        return found

    def put_many(self, items: list[tuple[Hashable, dict]]) -> None:
        weighed = [(key, row, _size(row)) for key, row in items]
        with self._lock:
            for key, row, size in weighed:
                if size > self.max_bytes:
                    continue
                old = self._rows.pop(key, None)
                if old is not None:
                    self.bytes -= old[1]
                self._rows[key] = (row, size)
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


def cached_rows(kind: str, queryset: QuerySet, read: Reader) -> list[dict]:
    """The rows ``read`` builds from ``queryset``, in its order, each built once per version.

    ``kind`` names what ``read`` builds (rows of one table built two ways are two kinds). ``read``
    is given a queryset and the extra columns to read with each row (``("id", VERSION)``), and
    answers the dicts and those columns' values, from one query.
    """
    if not _usable(queryset):
        return read(queryset, ())[0]
    listed = list(versioned(queryset).values_list("id", VERSION))
    if not listed:
        return []
    cache = row_cache()
    keys = [(kind, pk, version) for pk, version in listed]
    found = cache.get_many(keys)
    fresh: dict[int, dict] = {}
    if len(found) < len(keys):
        missing = [key[1] for key in keys if key not in found]
        # A row may change between the two queries: it is answered and kept as this read found it,
        # under the version it was read with.
        todo = queryset if len(missing) == len(keys) else queryset.filter(pk__in=missing)
        rows, ids = read(versioned(todo), ("id", VERSION))
        cache.put_many([((kind, pk, version), row) for row, (pk, version) in zip(rows, ids, strict=True)])
        fresh = {pk: row for row, (pk, _) in zip(rows, ids, strict=True)}
    # A row deleted between the two queries is left out, as a read one moment later would.
    answer = []
    for key in keys:
        row = found.get(key)
        if row is None:
            row = fresh.get(key[1])
        if row is not None:
            answer.append(row)
    return answer
