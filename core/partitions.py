"""Monthly range partitions for the tables that grow with traffic (PostgreSQL only).

Plain SQL, no library: a migration turns a table into one partitioned by range of its timestamp
(`partition_table`), one partition per calendar month (UTC) named `<table>_pYYYYMM`, plus
`<table>_default` for rows outside every month made (a clock far ahead, a month not made in time).
`ensure_partitions` makes the coming months' partitions (the `ensure_partitions` command and a
daily Celery beat task); `partitions_older_than` and `drop_partition` let retention remove a whole
month at once instead of deleting its rows.

What PostgreSQL asks of a partitioned table, and what this does about it:

- Its primary key and unique constraints must contain the partition key, so they become
  `(id, <key>)` and `(<columns>, <key>)` under the same names. `id` stays unique because one
  sequence numbers every partition; the other unique guarantees are kept by the writers (see the
  migrations that call `partition_table`).
- No foreign key may reference it by `id` alone, so models pointing at these tables declare
  `db_constraint=False` and the ORM keeps the integrity (its cascades are the ORM's anyway).
- An identity column is not allowed on a partitioned table before PostgreSQL 17, so `id` takes its
  default from a sequence owned by the column (what `serial` does); Django's sequence reset and
  `pg_get_serial_sequence` read it the same way.

Nothing here knows the project's tables: every range-partitioned table in the schema is looked up
in the catalog, so this module stays in `core`.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.db import connection as default_connection
from django.db import transaction
from django.utils import timezone

logger = logging.getLogger(__name__)

MONTHS_AHEAD = 3
# Creating or detaching a partition locks the parent briefly; never queue behind a long query
# while every insert queues behind us. The daily task tries again tomorrow (months are made ahead).
LOCK_TIMEOUT = "5s"

_MONTH_NAME = re.compile(r"_p(\d{4})(\d{2})$")


@dataclass(frozen=True)
class Partition:
    table: str  # the partitioned (parent) table
    name: str
    start: datetime  # inclusive
    end: datetime  # exclusive


def _month(moment: datetime | date) -> date:
    return date(moment.year, moment.month, 1)


def _next_month(month: date, n: int = 1) -> date:
    index = month.year * 12 + month.month - 1 + n
    return date(index // 12, index % 12 + 1, 1)


def _moment(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=UTC)


def _literal(month: date) -> str:
    return f"'{month.isoformat()} 00:00:00+00'"


def partition_name(table: str, month: date) -> str:
    return f"{table}_p{month.year:04d}{month.month:02d}"


def default_partition_name(table: str) -> str:
    return f"{table}_default"


def _qn(name: str) -> str:
    return default_connection.ops.quote_name(name)


# --- the catalog ------------------------------------------------------------------------------


def partitioned_tables(connection=default_connection) -> dict[str, str]:
    """Every range-partitioned table of the current schema, with the column it is partitioned on."""
    if connection.vendor != "postgresql":
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, a.attname
              FROM pg_partitioned_table p
              JOIN pg_class c ON c.oid = p.partrelid
              JOIN pg_namespace n ON n.oid = c.relnamespace
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = p.partattrs[0]
             WHERE p.partstrat = 'r' AND p.partnatts = 1 AND n.nspname = current_schema()
             ORDER BY c.relname
            """
        )
        return dict(cursor.fetchall())


def is_partitioned(table: str, connection=default_connection) -> bool:
    return table in partitioned_tables(connection)


def partitions(table: str, connection=default_connection) -> list[Partition]:
    """The monthly partitions of `table`, oldest first (the default partition is not one)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname FROM pg_inherits i
              JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = to_regclass(%s)
            """,
            [table],
        )
        names = [row[0] for row in cursor.fetchall()]
    found = []
    for name in names:
        match = _MONTH_NAME.search(name)
        if match and name == partition_name(table, date(int(match[1]), int(match[2]), 1)):
            month = date(int(match[1]), int(match[2]), 1)
            found.append(Partition(table, name, _moment(month), _moment(_next_month(month))))
    return sorted(found, key=lambda p: p.start)


def partitions_older_than(table: str, cutoff: datetime, connection=default_connection) -> list[Partition]:
    """The monthly partitions of `table` holding only rows older than `cutoff` (their end <= cutoff)."""
    return [p for p in partitions(table, connection) if p.end <= cutoff]


# --- making months ----------------------------------------------------------------------------


@contextmanager
def _short_locks(connection):
    """A cursor whose statements wait at most LOCK_TIMEOUT for a lock, for the current transaction;
    inside a caller's transaction the caller's own setting is put back afterwards."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout')")
        before = cursor.fetchone()[0]
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_TIMEOUT])
        yield cursor
        cursor.execute("SELECT set_config('lock_timeout', %s, true)", [before])


def _create_month(cursor, table: str, key: str, month: date) -> bool:
    """Make `table`'s partition for `month` unless it exists; False when rows of that month sit in
    the default partition already (they would have to move: left to an operator, and logged)."""
    name = partition_name(table, month)
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    if cursor.fetchone()[0]:
        return False
    default = default_partition_name(table)
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [default])
    if cursor.fetchone()[0]:
        cursor.execute(
            f"SELECT EXISTS (SELECT 1 FROM {_qn(default)} WHERE {_qn(key)} >= {_literal(month)}"
            f" AND {_qn(key)} < {_literal(_next_month(month))})"
        )
        if cursor.fetchone()[0]:
            logger.warning("partitions: rows of %s for %s are in %s; month not made", table, month, default)
            return False
    # Made apart and then attached, not CREATE TABLE ... PARTITION OF: attaching takes only a SHARE
    # UPDATE EXCLUSIVE lock on the table, so inserts and reads go on meanwhile (the partitioned
    # indexes, foreign keys and triggers are added to the new table as it is attached).
    cursor.execute(f"CREATE TABLE {_qn(name)} (LIKE {_qn(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    cursor.execute(
        f"ALTER TABLE {_qn(table)} ATTACH PARTITION {_qn(name)}"
        f" FOR VALUES FROM ({_literal(month)}) TO ({_literal(_next_month(month))})"
    )
    return True


def ensure_partitions(
    months_ahead: int = MONTHS_AHEAD, *, now: datetime | None = None, connection=default_connection
) -> list[str]:
    """Make every partitioned table's partitions from this month to `months_ahead` months ahead.

    Idempotent; moves no rows. Returns the names of the partitions it made.
    """
    if connection.vendor != "postgresql":
        return []
    this_month = _month((now or timezone.now()).astimezone(UTC))
    made = []
    for table, key in partitioned_tables(connection).items():
        for n in range(months_ahead + 1):
            month = _next_month(this_month, n)
            # Its own short transaction per partition: a lock timeout costs one month, not all.
            with transaction.atomic(using=connection.alias), _short_locks(connection) as cursor:
                if _create_month(cursor, table, key, month):
                    made.append(partition_name(table, month))
    if made:
        logger.info("partitions: made %s", ", ".join(made))
    return made


def drop_partition(name: str, connection=default_connection) -> None:
    """Detach one partition from its table and drop it, with everything in it.

    DETACH ... CONCURRENTLY does not block the table's readers and writers, but PostgreSQL allows it
    only outside a transaction and when the table has no default partition; otherwise a plain
    DETACH, which holds the parent's lock for an instant (bounded by LOCK_TIMEOUT).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent"
            " WHERE i.inhrelid = to_regclass(%s)",
            [name],
        )
        row = cursor.fetchone()
        if row is None:
            raise ValueError(f"{name} is not a partition")
        parent = row[0]
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [default_partition_name(parent)])
        has_default = cursor.fetchone()[0]
        if not has_default and not connection.in_atomic_block:
            cursor.execute(f"ALTER TABLE {_qn(parent)} DETACH PARTITION {_qn(name)} CONCURRENTLY")
            cursor.execute(f"DROP TABLE {_qn(name)}")
            logger.info("partitions: dropped %s of %s", name, parent)
            return
    nested = connection.in_atomic_block
    with transaction.atomic(using=connection.alias), _short_locks(connection) as cursor:
        if nested:
            # Rows written earlier in the caller's transaction have their deferred foreign-key
            # checks pending, and PostgreSQL refuses to drop a table with pending trigger events:
            # run them now, as Django's check_constraints() does.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(f"ALTER TABLE {_qn(parent)} DETACH PARTITION {_qn(name)}")
        cursor.execute(f"DROP TABLE {_qn(name)}")
    logger.info("partitions: dropped %s of %s", name, parent)


# --- migrations: a plain table to a partitioned one and back --------------------------------


def _definition(cursor, table: str) -> dict:
    """What must be rebuilt by hand on a new table: indexes, primary key and unique constraints,
    foreign keys, triggers, and the id sequence's position."""
    cursor.execute(
        """
        SELECT con.conname, con.contype,
               array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(num, ord)
                      JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord),
               pg_get_constraintdef(con.oid), con.conindid
          FROM pg_constraint con
         WHERE con.conrelid = to_regclass(%s) AND con.contype IN ('p', 'u', 'f')
         ORDER BY con.conname
        """,
        [table],
    )
    constraints = cursor.fetchall()
    backing = {row[4] for row in constraints if row[1] in ("p", "u")}
    cursor.execute(
        """
        SELECT x.indexrelid, i.relname, pg_get_indexdef(x.indexrelid), x.indisunique,
               array(SELECT pg_get_indexdef(x.indexrelid, k, true) FROM generate_series(1, x.indnkeyatts) AS k),
               pg_get_expr(x.indpred, x.indrelid, true)
          FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         WHERE x.indrelid = to_regclass(%s) ORDER BY i.relname
        """,
        [table],
    )
    indexes, unique_indexes = [], []
    for oid, name, sql, unique, columns, predicate in cursor.fetchall():
        if oid in backing:
            continue
        if unique:
            # A unique index no constraint backs (Django's UniqueConstraint with a condition or
            # expressions): its key columns (or expressions) and predicate, for `_rebuild` to
            # recreate with the partition key, as it does the unique constraints.
            unique_indexes.append((name, list(columns), predicate))
            continue
        # A partitioned parent's index reads "ON ONLY <table>"; the plain table's must not.
        indexes.append(sql.replace(" ON ONLY ", " ON "))
    cursor.execute(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal"
        " ORDER BY tgname",
        [table],
    )
    triggers = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        "SELECT conrelid::regclass::text, conname FROM pg_constraint"
        " WHERE confrelid = to_regclass(%s) AND contype = 'f' AND conparentid = 0",
        [table],
    )
    referenced_by = cursor.fetchall()
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    sequence = cursor.fetchone()[0]
    cursor.execute(f"SELECT last_value, is_called FROM {sequence}")
    last_value, is_called = cursor.fetchone()
    cursor.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'id'",
        [table],
    )
    id_type = cursor.fetchone()[0]
    return {
        "constraints": constraints,
        "indexes": indexes,
        "unique_indexes": unique_indexes,
        "triggers": triggers,
        "referenced_by": referenced_by,
        "sequence": (last_value, is_called),
        "id_type": id_type,
    }


def _rebuild(cursor, table: str, spec: dict, *, key: str, adding: bool) -> None:
    """Recreate on the new `table` what `_definition` read off the old one; `key` is added to the
    primary key, unique constraints and unique indexes (PostgreSQL requires it of every unique index
    of a partitioned table) or taken off their end (back to plain). So uniqueness holds per value of
    `key` while partitioned: the same trade-off for every unique rule."""

    def keyed(columns: list[str], column: str) -> list[str]:
        if adding and column not in columns:
            return [*columns, column]
        if not adding and len(columns) > 1 and columns[-1] == column:
            return columns[:-1]
        return columns

    for name, kind, columns, sql, _ in spec["constraints"]:
        if kind == "f":
            cursor.execute(f"ALTER TABLE {_qn(table)} ADD CONSTRAINT {_qn(name)} {sql}")
            continue
        word = "PRIMARY KEY" if kind == "p" else "UNIQUE"
        columns = keyed(columns, key)
        cursor.execute(f"ALTER TABLE {_qn(table)} ADD CONSTRAINT {_qn(name)} {word} ({', '.join(map(_qn, columns))})")
    # pg_get_indexdef gives each key column as SQL, a name quoted only where it must be (quote_ident),
    # or an expression; the partition key is written the same way to be found among them.
    cursor.execute("SELECT quote_ident(%s)", [key])
    key_sql = cursor.fetchone()[0]
    for name, columns, predicate in spec["unique_indexes"]:
        columns = keyed(columns, key_sql)
        where = f" WHERE {predicate}" if predicate else ""
        cursor.execute(f"CREATE UNIQUE INDEX {_qn(name)} ON {_qn(table)} ({', '.join(columns)}){where}")
    for sql in spec["indexes"]:
        cursor.execute(sql)
    for sql in spec["triggers"]:
        cursor.execute(sql)


def _set_sequence(cursor, table: str, spec: dict) -> None:
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    sequence = cursor.fetchone()[0]
    last_value, is_called = spec["sequence"]
    cursor.execute("SELECT setval(%s, %s, %s)", [sequence, last_value, is_called])


def partition_table(schema_editor, table: str, key: str, *, months_ahead: int = MONTHS_AHEAD) -> None:
    """Turn `table` into one range-partitioned by month on `key`, keeping its rows, names and ids.

    For a migration (PostgreSQL; a no-op elsewhere). The rows are copied in the migration's
    transaction, which holds the table's lock meanwhile: on a large table, run it in a quiet hour.
    """
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or is_partitioned(table, connection):
        return
    new = f"{table}__parted"
    with connection.cursor() as cursor:
        spec = _definition(cursor, table)
        if spec["referenced_by"]:
            refs = spec["referenced_by"]
            raise RuntimeError(f"{table} is referenced by foreign keys {refs}: declare them db_constraint=False")
        cursor.execute(
            f"CREATE TABLE {_qn(new)} (LIKE {_qn(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS"
            f" INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE ({_qn(key)})"
        )
        cursor.execute(f"SELECT min({_qn(key)}) FROM {_qn(table)}")
        oldest = cursor.fetchone()[0]
        this_month = _month(timezone.now().astimezone(UTC))
        month = min(_month(oldest.astimezone(UTC)), this_month) if oldest else this_month
        last = _next_month(this_month, months_ahead)
        while month <= last:
            cursor.execute(
                f"CREATE TABLE {_qn(partition_name(table, month))} PARTITION OF {_qn(new)}"
                f" FOR VALUES FROM ({_literal(month)}) TO ({_literal(_next_month(month))})"
            )
            month = _next_month(month)
        cursor.execute(f"CREATE TABLE {_qn(default_partition_name(table))} PARTITION OF {_qn(new)} DEFAULT")
        cursor.execute(f"INSERT INTO {_qn(new)} SELECT * FROM {_qn(table)}")
        cursor.execute(f"DROP TABLE {_qn(table)}")
        cursor.execute(f"ALTER TABLE {_qn(new)} RENAME TO {_qn(table)}")
        sequence = f"{table}_id_seq"
        cursor.execute(f"CREATE SEQUENCE {_qn(sequence)} AS {spec['id_type']} OWNED BY {_qn(table)}.id")
        cursor.execute(f"ALTER TABLE {_qn(table)} ALTER COLUMN id SET DEFAULT nextval('{sequence}'::regclass)")
        _set_sequence(cursor, table, spec)
        _rebuild(cursor, table, spec, key=key, adding=True)


def unpartition_table(schema_editor, table: str) -> None:
    """The reverse of `partition_table`: one plain table again, with an identity id as Django makes."""
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or not is_partitioned(table, connection):
        return
    key = partitioned_tables(connection)[table]
    plain = f"{table}__plain"
    with connection.cursor() as cursor:
        spec = _definition(cursor, table)
        if spec["referenced_by"]:
            raise RuntimeError(f"{table} is referenced by foreign keys {spec['referenced_by']}")
        cursor.execute(
            f"CREATE TABLE {_qn(plain)} (LIKE {_qn(table)} INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS)"
        )
        # Every default but id's (the partitioned table's sequence goes with it).
        cursor.execute(
            "SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d"
            " JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum"
            " WHERE d.adrelid = to_regclass(%s) AND a.attname <> 'id'",
            [table],
        )
        for column, expression in cursor.fetchall():
            cursor.execute(f"ALTER TABLE {_qn(plain)} ALTER COLUMN {_qn(column)} SET DEFAULT {expression}")
        cursor.execute(f"INSERT INTO {_qn(plain)} SELECT * FROM {_qn(table)}")
        cursor.execute(f"DROP TABLE {_qn(table)}")
        cursor.execute(f"ALTER TABLE {_qn(plain)} RENAME TO {_qn(table)}")
        cursor.execute(f"ALTER TABLE {_qn(table)} ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY")
        _set_sequence(cursor, table, spec)
        _rebuild(cursor, table, spec, key=key, adding=False)
