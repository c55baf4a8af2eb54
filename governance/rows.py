"""Lean INSERT and UPDATE for the report hot path.

Every grounding call writes a report, a decision and one evaluation per policy. Through the ORM
(`objects.create`, `bulk_create`, `save(update_fields=...)`) those writes cost about 2 ms of
Python per call, mostly query compilation, several times the database's own work (bench/report.py).
These helpers write the same rows with one cached statement each, still preparing every value
through its model field (JSON, datetimes, foreign keys), so they stay portable between PostgreSQL
and SQLite. No signals are sent; nothing in the project listens for these models' signals.
"""

from collections.abc import Iterable
from functools import lru_cache

from django.db import connection
from django.db.models import Model

# Rows per INSERT: well under SQLite's and PostgreSQL's bound-parameter limits for these tables.
MAX_ROWS_PER_STATEMENT = 400


# Field types whose database value is the Python value itself on every backend we support.
_AS_IS = frozenset({"AutoField", "BigAutoField", "BigIntegerField", "BooleanField", "CharField", "FloatField",
                    "IntegerField", "PositiveBigIntegerField", "PositiveIntegerField", "PositiveSmallIntegerField",
                    "SlugField", "SmallIntegerField", "TextField"})


def _preparer(field):
    """How a value is made ready for the database: as is, or through the field (JSON, datetimes)."""
    target = field.target_field if field.is_relation else field
    if target.get_internal_type() in _AS_IS:
        return None
    return field.get_db_prep_save


@lru_cache(maxsize=32)
def _insert_plan(model: type[Model]):
    qn = connection.ops.quote_name
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key)
    head = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) VALUES "
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return fields, tuple(_preparer(f) for f in fields), head, row, f" RETURNING {qn(model._meta.pk.column)}"


def insert_rows(model: type[Model], rows: list[dict], *, return_pks: bool = False) -> list | None:
    """Insert rows given as {field attname: value}; a missing field takes its model default.

    Returns the new primary keys, in order, when asked.
    """
    fields, preparers, head, one, returning = _insert_plan(model)
    pks = []
    for start in range(0, len(rows), MAX_ROWS_PER_STATEMENT):
        batch = rows[start:start + MAX_ROWS_PER_STATEMENT]
        params = []
        for row in batch:
            for field, prepare in zip(fields, preparers):
                value = row[field.attname] if field.attname in row else field.get_default()
                params.append(value if prepare is None or value is None else prepare(value, connection))
        sql = head + ", ".join([one] * len(batch))
        with connection.cursor() as cursor:
            if return_pks:
                cursor.execute(sql + returning, params)
                pks += [r[0] for r in cursor.fetchall()]
            else:
                cursor.execute(sql, params)
    return pks if return_pks else None


def insert_instance(obj: Model) -> Model:
    """Insert an unsaved instance as it stands and give it its primary key, like `save()` would."""
    fields = _insert_plan(type(obj))[0]
    obj.pk = insert_rows(type(obj), [{f.attname: getattr(obj, f.attname) for f in fields}], return_pks=True)[0]
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj


@lru_cache(maxsize=64)
def _update_plan(model: type[Model], names: tuple[str, ...]):
    qn = connection.ops.quote_name
    fields = tuple(model._meta.get_field(name) for name in names)
    sets = ", ".join(f"{qn(f.column)} = %s" for f in fields)
    return fields, f"UPDATE {qn(model._meta.db_table)} SET {sets} WHERE {qn(model._meta.pk.column)} = %s"


def update_fields(obj: Model, names: Iterable[str]) -> None:
    """`obj.save(update_fields=names)` in one cached statement."""
    fields, sql = _update_plan(type(obj), tuple(dict.fromkeys(names)))
    params = [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, obj.pk])


@lru_cache(maxsize=1)
def _lock_run_sql() -> str:
    from .models import Run

    qn = connection.ops.quote_name
    columns = ", ".join(qn(f.column) for f in Run._meta.concrete_fields)
    sql = f"SELECT {columns} FROM {qn(Run._meta.db_table)} WHERE {qn('tenant_id')} = %s AND {qn('id')} = %s"
    return sql + (" FOR UPDATE" if connection.features.has_select_for_update else "")


def lock_run(*, tenant, run_id):
    """The tenant's run, row-locked for the transaction, or None (the caller then answers 404).

    `tenants.access.run_for(..., for_update=True)` builds and compiles a queryset each call;
    this is the same query as one cached statement, for the grounding call every agent makes.
    """
    from .models import Run

    if not isinstance(run_id, int) or not 0 < run_id < 2**63:
        return None
    return next(iter(Run.objects.raw(_lock_run_sql(), [tenant.pk, run_id])), None)
