"""Lean INSERT and UPDATE for the report hot path.

Every grounding call writes a report, a decision and one evaluation per policy. Through the ORM
(`objects.create`, `bulk_create`, `save(update_fields=...)`) those writes cost about 2 ms of
Python per call, mostly query compilation, several times the database's own work (bench/report.py).
These helpers write the same rows with one cached statement each, still preparing every value
through its model field (JSON, datetimes, foreign keys), so they stay portable between PostgreSQL
and SQLite. No signals are sent; nothing in the project listens for these models' signals.

On PostgreSQL the grounding call goes further: one read and one write statement, both prepared
(`grounding_run_state` and `write_grounding`, below).
"""

import json
from collections.abc import Iterable
from functools import lru_cache

from django.db import connection
from django.db.models import Model
from psycopg.types.numeric import Int8

# Rows per INSERT: well under SQLite's and PostgreSQL's bound-parameter limits for these tables.
MAX_ROWS_PER_STATEMENT = 400


# Field types whose database value is the Python value itself on every backend we support.
_AS_IS = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "BigIntegerField",
        "BooleanField",
        "CharField",
        "FloatField",
        "IntegerField",
        "PositiveBigIntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "SlugField",
        "SmallIntegerField",
        "TextField",
    }
)


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
        batch = rows[start : start + MAX_ROWS_PER_STATEMENT]
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


# --- PostgreSQL: a grounding report in two statements, both prepared -----------------------
#
# The generic path above costs eight statements per report (BEGIN, the locked read, report,
# run update, decision, evaluations, COMMIT). Each is a round trip, about 0.1 ms of Python in
# Django and psycopg, and a statement PostgreSQL parses and plans afresh. On PostgreSQL the
# same rows are written with an optimistic read and one statement:
#
#   1. `grounding_run_state`: the run's accumulated state, read without a lock;
#   2. the engine decides in Python;
#   3. `write_grounding`: one statement whose data-modifying CTEs update the run, then insert the
#      report, the decision and its evaluations -- but only if the run's `report_count` is still
#      the one read in step 1 and the run has not ended. A single statement is atomic on its own
#      (all or nothing, no BEGIN/COMMIT needed), and every change to the state the engine read
#      (claims, sources, confidence) comes with a `report_count` increment, so a matching count
#      proves the decision was made on the current state. A concurrent writer holding the row
#      makes the UPDATE wait and then re-check its WHERE on the new row version (READ
#      COMMITTED), so it matches nothing instead of overwriting, and the caller takes the locked
#      path. `final_action` and `status` are raised inside the statement, so a background judge
#      raising them concurrently (without touching `report_count`) is merged, not lost.
#
# Both statements are prepared (`_prepared_cursor`). Measured on the bench's report (5 policies),
# per call: 1.75 ms of Python and 0.62 ms of PostgreSQL CPU before, 1.08 and 0.78 with the two
# statements unprepared, 1.02 and 0.42 prepared.


def _prepared_cursor():
    """A cursor whose statements PostgreSQL parses and plans once per connection, not per call.

    Django binds parameters client-side (psycopg's ClientCursor), so PostgreSQL parses, analyses
    and plans every statement it receives afresh; for the write statement below that was half of
    the database's CPU per report. psycopg prepares statements only on server-binding cursors,
    and only once the connection has a `prepare_threshold` (Django leaves it None). ClientCursor
    never prepares, so setting the threshold here prepares only what runs on cursors made here:
    the ORM's queries are unaffected. With OPTIONS["server_side_binding"] the project's own
    binding and threshold apply to every cursor, so the ordinary one is used.
    """
    from django.db.backends.postgresql.base import ServerBindingCursor

    if connection.settings_dict["OPTIONS"].get("server_side_binding") is True:
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    pg = connection.connection
    if pg.prepare_threshold is None:
        pg.prepare_threshold = 0  # prepare on first use
    with connection.wrap_database_errors:
        cursor = ServerBindingCursor(pg)
    # Django's wrappers, as connection.cursor() gives: query logging, error translation.
    return connection.make_debug_cursor(cursor) if connection.queries_logged else connection.make_cursor(cursor)


# The run is found by its primary key; the tenant is checked on the row. Written `tenant_id + 0`
# so that no (tenant_id, ...) index can serve it: with `tenant_id = %s` the planner, lacking
# statistics (a new database) or on a small table, scanned every run of the tenant through the
# (tenant_id, started_at) index or the whole table instead of probing one key.
_NOT_AN_INDEX_KEY = "({} + 0)"


# What the engine needs of a run at mid_execution (and what decides 404/409); the run's own
# citations and output are not read: the report's are appended in SQL.
_RUN_STATE_FIELDS = (
    "id",
    "tenant_id",
    "agent_name",
    "status",
    "final_action",
    "ended_at",
    "report_count",
    "unsupported_claims",
    "sources",
    "output_confidence",
)
_RUN_STATE_JSON = frozenset({"unsupported_claims", "sources"})


@lru_cache(maxsize=1)
def _run_state_sql() -> str:
    from .models import Run

    qn = connection.ops.quote_name
    columns = ", ".join(qn(Run._meta.get_field(name).column) for name in _RUN_STATE_FIELDS)
    return (
        f"SELECT {columns} FROM {qn(Run._meta.db_table)} "
        f"WHERE {qn('id')} = %s AND {_NOT_AN_INDEX_KEY.format(qn('tenant_id'))} = %s"
    )


def grounding_run_state(*, tenant_id: int, run_id):
    """The run with the fields above loaded (the rest deferred, loaded if touched), or None."""
    from .models import Run

    if not isinstance(run_id, int) or not 0 < run_id < 2**63:
        return None
    with _prepared_cursor() as cursor:
        cursor.execute(_run_state_sql(), [Int8(run_id), Int8(tenant_id)])
        row = cursor.fetchone()
    if row is None:
        return None
    # psycopg hands jsonb to Django as text; JSONField.from_db_value would json.loads it too.
    loaded = {
        name: json.loads(v) if name in _RUN_STATE_JSON and v is not None else v
        for name, v in zip(_RUN_STATE_FIELDS, row)
    }
    names = [f.attname for f in Run._meta.concrete_fields if f.attname in loaded]  # from_db wants model order
    return Run.from_db(connection.alias, names, [loaded[name] for name in names])


def _insert_select(model, exprs: dict[str, str], source: str, defaults: list) -> str:
    """`INSERT INTO model (every column) SELECT ... FROM source`.

    `exprs` gives the SQL of each field by attname; any other column gets its model default as a
    parameter (collected in `defaults`), so a column added to the model later cannot be left out.
    """
    qn = connection.ops.quote_name
    columns, values = [], []
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(qn(field.column))
        if field.attname in exprs:
            values.append(exprs[field.attname])
        else:
            key = f"default_{model._meta.model_name}_{field.attname}"
            defaults.append((key, field))
            values.append(f"%({key})s")
    return f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(columns)}) SELECT {', '.join(values)} FROM {source}"


# The columns of each evaluation, sent as one jsonb array: one parameter however many policies
# apply, so the statement text is the same for every call (psycopg caches its parsing only for
# statements of at most 50 parameters).
_EVALUATION_COLUMNS = (
    ("policy_id", "bigint"),
    ("policy_name", "text"),
    ("policy_version", "integer"),
    ("category", "text"),
    ("phase", "text"),
    ("action", "text"),
    ("reason", "text"),
    ("metadata", "jsonb"),
    ("source", "text"),
)
# Rows in array order (n), so the evaluations' ids follow the engine's order, as before.
_EVALUATIONS_FROM = (
    "ROWS FROM (jsonb_to_recordset(%(evaluations)s::jsonb) AS ("
    + ", ".join(f"{name} {kind}" for name, kind in _EVALUATION_COLUMNS)
    + ")) WITH ORDINALITY AS e("
    + ", ".join(name for name, _ in _EVALUATION_COLUMNS)
    + ", n)"
)


@lru_cache(maxsize=1)
def _grounding_write_plan():
    from .models import Decision, Evaluation, GroundingReport, Run

    qn = connection.ops.quote_name
    defaults: list = []
    report = _insert_select(
        GroundingReport,
        {
            "tenant_id": "run.tenant_id",
            "run_id": "run.id",
            "seq": "run.report_count",
            "grounding_scores": "input.grounding_scores",
            "citations": "input.citations",
            "unsupported_claims": "input.unsupported_claims",
            "output_confidence": "input.output_confidence",
            "output": "input.output",
            "sources": "input.sources",
            "created_at": "%(report_at)s",
        },
        "run, input",
        defaults,
    )
    decision = _insert_select(
        Decision,
        {
            "tenant_id": "run.tenant_id",
            "run_id": "run.id",
            "report_id": "report.id",
            "phase": "%(phase)s",
            "action": "%(action)s",
            "reason": "%(reason)s",
            "abstention_response": "%(abstention_response)s",
            "created_at": "%(decided_at)s",
        },
        "run, report",
        defaults,
    )
    evaluation = _insert_select(
        Evaluation,
        {
            "tenant_id": "run.tenant_id",
            "run_id": "run.id",
            "decision_id": "decision.id",
            "policy_id": "e.policy_id",
            "policy_ref": "e.policy_id",
            "policy_name": "e.policy_name",
            "policy_version": "e.policy_version",
            "category": "e.category",
            "agent_name": "run.agent_name",
            "phase": "e.phase",
            "action": "e.action",
            "reason": "e.reason",
            "metadata": "e.metadata",
            "source": "e.source",
            "created_at": "%(decided_at)s",
        },
        f"run, decision, {_EVALUATIONS_FROM}",
        defaults,
    )
    sql = f"""
        WITH input AS (
            SELECT %(grounding_scores)s::jsonb AS grounding_scores, %(citations)s::jsonb AS citations,
                   %(unsupported_claims)s::jsonb AS unsupported_claims, %(sources)s::jsonb AS sources,
                   %(output_confidence)s::double precision AS output_confidence, %(output)s::text AS output
        ), run AS (
            UPDATE {qn(Run._meta.db_table)} AS r SET
                report_count = r.report_count + 1,
                citations = r.citations || input.citations,
                unsupported_claims = r.unsupported_claims || input.unsupported_claims,
                sources = r.sources || input.sources,
                output_confidence = COALESCE(input.output_confidence, r.output_confidence),
                output = CASE WHEN input.output <> '' THEN input.output ELSE r.output END,
                final_action = CASE WHEN (%(ranks)s::jsonb ->> r.final_action)::integer < %(rank)s
                                    THEN %(action)s ELSE r.final_action END,
                status = CASE WHEN %(blocks)s AND r.status = %(running)s THEN %(blocked)s ELSE r.status END
            FROM input
            WHERE r.id = %(run_id)s AND {_NOT_AN_INDEX_KEY.format("r.tenant_id")} = %(tenant_id)s
              AND r.report_count = %(seen_reports)s AND r.ended_at IS NULL
            RETURNING r.id, r.tenant_id, r.agent_name, r.report_count, r.status, r.final_action
        ), report AS (
            {report} RETURNING id
        ), decision AS (
            {decision} RETURNING id
        ), evaluation AS (
            {evaluation} ORDER BY e.n
        )
        SELECT run.report_count, run.status, run.final_action, decision.id, report.id FROM run, decision, report
    """
    return " ".join(sql.split()), tuple(defaults)


def write_grounding(
    *,
    run,
    seen_reports: int,
    report: dict,
    decision,
    evaluations: list[dict],
    severity: dict[str, int],
    report_at,
    decided_at,
) -> tuple | None:
    """Update the run and insert report, decision and evaluations in one statement (see above).

    Returns (report_count, status, final_action, decision id, report id) as written, or None when the run
    changed since it was read (or ended): nothing was written, the caller retries under a lock.
    """
    from .models import Run

    sql, defaults = _grounding_write_plan()
    params = {key: field.get_db_prep_save(field.get_default(), connection) for key, field in defaults}
    params.update(
        grounding_scores=json.dumps(report["grounding_scores"]),
        citations=json.dumps(report["citations"]),
        unsupported_claims=json.dumps(report["unsupported_claims"]),
        sources=json.dumps(report["sources"]),
        output_confidence=report["output_confidence"],
        output=report["output"],
        # Integers as int8 whatever their size: psycopg would pick int2/int4/int8 by value, and
        # each combination of types is a statement prepared anew.
        tenant_id=Int8(run.tenant_id),
        run_id=Int8(run.pk),
        seen_reports=Int8(seen_reports),
        ranks=json.dumps(severity),
        rank=Int8(severity[decision.action]),
        action=decision.action,
        blocks=decision.action == "block",
        running=Run.Status.RUNNING.value,
        blocked=Run.Status.BLOCKED.value,
        phase=decision.phase,
        reason=decision.reason,
        abstention_response=decision.abstention_response,
        evaluations=json.dumps(evaluations),
        report_at=report_at,
        decided_at=decided_at,
    )
    with _prepared_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()
