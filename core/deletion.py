"""Bounded deletes for retention: one short statement per batch of primary keys.

Django's `QuerySet.delete()` collects every related row in memory first and runs signals; retention
deletes millions of rows that have neither, children before parents, so it says exactly which rows
go, a batch at a time, each batch in the caller's own short transaction.
"""

from collections.abc import Sequence

from django.db import connections, router

# Rows per DELETE: small enough that a batch holds its row locks for milliseconds, large enough
# that the statement overhead stays small next to the work.
BATCH = 1000


def delete_by_ids(model, ids: Sequence[int]) -> int:
    """DELETE the rows of `model` with these primary keys; the number of rows removed."""
    if not ids:
        return 0
    connection = connections[router.db_for_write(model)]
    qn = connection.ops.quote_name
    placeholders = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {qn(model._meta.db_table)} WHERE {qn(model._meta.pk.column)} IN ({placeholders})",
            list(ids),
        )
        return cursor.rowcount
