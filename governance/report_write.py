"""Storing one grounding report: its sources, the report, the run's counters, the decision and
its evaluations. The rows are built once (governance/rows.py); this module only saves them.

Two ways, the same rows:

- `store`: the ORM, under the run's row lock (every database);
- `store_in_one_statement` (PostgreSQL): one statement whose data-modifying CTEs update the run
  and insert everything else, only if the run's `report_count` is still the one the caller read
  and the run has not ended. bench/report.py needs it: through the ORM a report is seven round
  trips (BEGIN, locked read, four writes, COMMIT), and the report/ping ratio fell from 0.55 to
  0.30 on this machine; unlocked read plus this statement is two. Every change to what the
  engine read (the run's sources) comes with a `report_count` increment, so a matching count
  proves the decision was made on the current state; a concurrent report makes the UPDATE match
  nothing (READ COMMITTED re-checks the WHERE on the new row version), nothing is written, and
  the caller decides again under the lock. `final_action` and `status` are raised in SQL, so a
  background judge raising them meanwhile (without touching `report_count`) is merged, not lost.
  A report whose decision reads nothing of the run but its identity (no citation to resolve, no
  retrieval, no judge), into a run this process has started or reported into, skips the read:
  the statement then checks only that the run is the tenant's and has not ended (`known_run`).

The statement inserts whatever `rows` built, column by column from the model (a field added to
Evaluation is written here without a change); it fills in only the keys the CTEs produce.
"""

import json
import threading
from datetime import datetime
from functools import lru_cache

from django.db import connection
from django.db.models import JSONField, Model
from psycopg.types.numeric import Int8

from core.prepared import prepared_cursor
from core.vocabulary import SEVERITY

from .models import Decision, Evaluation, GroundingReport, Run, RunSource, judge_cost_of, report_score


def in_one_statement() -> bool:
    """Whether reports are written with `store_in_one_statement` (PostgreSQL)."""
    return connection.vendor == "postgresql"


def store(
    *,
    run: Run,
    report: GroundingReport,
    sources: list[RunSource],
    decision: Decision,
    evaluations: list[Evaluation],
    run_fields: list[str],
) -> None:
    """Save the report's rows through the ORM; the caller holds the run's row lock."""
    if sources:
        RunSource.objects.bulk_create(sources, ignore_conflicts=True)
    report.save(force_insert=True)
    run.save(update_fields=run_fields)
    decision.save(force_insert=True)
    if evaluations:
        Evaluation.objects.bulk_create(evaluations)


# --- PostgreSQL: one statement -------------------------------------------------------------

# Keys the CTEs fill in, per model: the run's, the new report's and the new decision's ids.
_FROM_CTE = {
    RunSource: {"run_id": "run.id", "tenant_id": "run.tenant_id"},
    GroundingReport: {"run_id": "run.id", "tenant_id": "run.tenant_id", "seq": "run.report_count"},
    Decision: {"run_id": "run.id", "tenant_id": "run.tenant_id", "report_id": "report.id"},
    Evaluation: {"run_id": "run.id", "tenant_id": "run.tenant_id", "decision_id": "decision.id"},
}


# A run's start: the run row itself comes whole from the caller; its decision has no report.
_START_FROM_CTE = {
    Run: {},
    Decision: {"run_id": "run.id", "tenant_id": "run.tenant_id"},
    Evaluation: _FROM_CTE[Evaluation],
}


def _fields(model: type[Model], from_cte: dict | None = None):
    from_cte = _FROM_CTE[model] if from_cte is None else from_cte
    return [f for f in model._meta.concrete_fields if not f.primary_key and f.attname not in from_cte]


def _insert(model: type[Model], param: str, sources: str, tail: str = "", from_cte: dict | None = None) -> str:
    """INSERT INTO model (every column) SELECT ... FROM <sources>, the rows given as a jsonb array;
    the columns ``from_cte`` names (default `_FROM_CTE`'s) come from the sources instead."""
    qn = connection.ops.quote_name
    from_cte = _FROM_CTE[model] if from_cte is None else from_cte
    own = _fields(model, from_cte)
    columns = [*(qn(f.column) for f in own), *(qn(model._meta.get_field(a).column) for a in from_cte)]
    values = [*(f"r.{qn(f.column)}" for f in own), *from_cte.values()]
    record = ", ".join(f"{qn(f.column)} {f.db_type(connection)}" for f in own)
    # WITH ORDINALITY and ORDER BY keep the rows' ids in the order given (the engine's order).
    return (
        f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(columns)}) SELECT {', '.join(values)} "
        f"FROM {sources + ', ' if sources else ''}ROWS FROM (jsonb_to_recordset(%({param})s::jsonb) AS ({record})) "
        f"WITH ORDINALITY AS r({', '.join(qn(f.column) for f in own)}, n) ORDER BY r.n {tail}"
    )


@lru_cache(maxsize=1)
def _statement() -> str:
    qn = connection.ops.quote_name
    return " ".join(
        f"""
        WITH run AS (
            UPDATE {qn(Run._meta.db_table)} AS r SET
                report_count = r.report_count + 1,
                output = CASE WHEN %(output)s::text <> '' THEN %(output)s::text ELSE r.output END,
                worst_score = LEAST(r.worst_score, %(score)s::double precision),
                judge_cost = r.judge_cost + %(judge_cost)s::double precision,
                final_action = CASE WHEN (%(ranks)s::jsonb ->> r.final_action)::integer < %(rank)s::integer
                                    THEN %(action)s::text ELSE r.final_action END,
                status = CASE WHEN %(blocks)s::boolean AND r.status = %(running)s::text
                              THEN %(blocked)s::text ELSE r.status END
            WHERE r.id = %(run_id)s::bigint AND (r.tenant_id + 0) = %(tenant_id)s::bigint
              AND (%(seen_reports)s::bigint IS NULL OR r.report_count = %(seen_reports)s::bigint)
              AND r.ended_at IS NULL
            RETURNING r.id, r.tenant_id, r.report_count, r.status, r.final_action
        ), sources AS (
            {_insert(RunSource, "sources", "run", "ON CONFLICT DO NOTHING")}
        ), report AS (
            {_insert(GroundingReport, "report", "run", "RETURNING id")}
        ), decision AS (
            {_insert(Decision, "decision", "run, report", "RETURNING id")}
        ), evaluation AS (
            {_insert(Evaluation, "evaluations", "run, decision")}
        )
        SELECT run.report_count, run.status, run.final_action, report.id, decision.id FROM run, report, decision
    """.split()
    )


# What a report reads of its run. The tenant is checked on the row, written `tenant_id + 0` (as in
# the write above) so that no (tenant_id, ...) index can serve the query: on a new database (no
# statistics) the planner scanned all of a tenant's runs through such an index instead of probing
# one key; the write's generic plan did the same (EXPLAIN: an index scan on the run's tenant_id).
# In the model's field order, which is the order Run.from_db assigns a partial row's values in.
RUN_FIELDS = tuple(
    f.attname
    for f in Run._meta.concrete_fields
    if f.attname
    in {
        "id",
        "tenant_id",
        "agent_name",
        "status",
        "final_action",
        "ended_at",
        "report_count",
        "worst_score",
        "judge_cost",
        "api_key_id",
    }
)


@lru_cache(maxsize=2)
def _run_sql(owned: bool) -> str:
    qn = connection.ops.quote_name
    columns = ", ".join(qn(Run._meta.get_field(name).column) for name in RUN_FIELDS)
    owner = f" AND {qn(Run._meta.get_field('api_key').column)} = %s" if owned else ""
    return (
        f"SELECT {columns} FROM {qn(Run._meta.db_table)} WHERE {qn('id')} = %s AND ({qn('tenant_id')} + 0) = %s" + owner
    )


def read_run(*, tenant_id: int, run_id, owner_key_id: int | None = None) -> Run | None:
    """The run's RUN_FIELDS, unlocked, in one prepared statement; None if it is not the tenant's,
    or, with ``owner_key_id``, not started by that key (the caller's locked read then answers 404).
    The ORM's read costs more Python than the rest of this path together."""
    if not isinstance(run_id, int) or not 0 < run_id < 2**63:
        return None
    params = [Int8(run_id), Int8(tenant_id)]
    if owner_key_id is not None:
        params.append(Int8(owner_key_id))
    with prepared_cursor() as cursor:
        cursor.execute(_run_sql(owner_key_id is not None), params)
        row = cursor.fetchone()
    return None if row is None else Run.from_db(connection.alias, RUN_FIELDS, row)


# --- Runs this process has seen: a report that reads nothing of its run skips the read ------------

# What never changes once a run has started (its tenant, agent and starting key), by run id, as this
# process last read or wrote it. A report whose decision depends on nothing else of the run (no
# citation to resolve against earlier sources, no retrieval, no judge) is written without reading
# the run first (`store_in_one_statement` with ``seen_reports=None``): one round trip instead of two
# (bench/report.py). The statement still refuses a run that has ended or is gone, and the caller
# then reads it as before, so a stale entry costs a read, never a wrong answer.
_KNOWN_RUNS: dict[int, tuple[int, str, int | None]] = {}
_KNOWN_RUNS_MAX = 20_000
_KNOWN_RUNS_LOCK = threading.Lock()


def remember(run: Run) -> None:
    """Keep ``run``'s identity for later reports into it (see `known_run`)."""
    with _KNOWN_RUNS_LOCK:
        if len(_KNOWN_RUNS) >= _KNOWN_RUNS_MAX:
            del _KNOWN_RUNS[next(iter(_KNOWN_RUNS))]  # the oldest entry (dicts keep insertion order)
        _KNOWN_RUNS[run.pk] = (run.tenant_id, run.agent_name, run.api_key_id)


def known_run(*, tenant_id: int, run_id, owner_key_id: int | None = None) -> Run | None:
    """The run as `remember` kept it, with its mutable state unknown (``report_count`` None), if it is
    the tenant's and (with ``owner_key_id``) that key's; None otherwise (the caller reads the run)."""
    known = _KNOWN_RUNS.get(run_id) if isinstance(run_id, int) else None
    if known is None:
        return None
    run_tenant, agent_name, api_key_id = known
    if run_tenant != tenant_id or (owner_key_id is not None and api_key_id != owner_key_id):
        return None
    values = {
        "id": run_id,
        "tenant_id": run_tenant,
        "agent_name": agent_name,
        "api_key_id": api_key_id,
        # Placeholders: the write answers the real status and final action, and checks it has not ended.
        "status": Run.Status.RUNNING.value,
        "final_action": "allow",
        "ended_at": None,
        "report_count": None,
        "worst_score": None,  # the statement lowers it in SQL
        "judge_cost": 0.0,  # the statement adds to it in SQL
    }
    return Run.from_db(connection.alias, RUN_FIELDS, [values[name] for name in RUN_FIELDS])


def forget_known_runs() -> None:
    """Empty the cache (tests)."""
    with _KNOWN_RUNS_LOCK:
        _KNOWN_RUNS.clear()


def _as_json(objs: list[Model], from_cte: dict | None = None) -> str:
    """Unsaved rows as a jsonb array of their own columns (keys the CTEs fill in left out)."""
    if not objs:
        return "[]"
    fields = _fields(type(objs[0]), from_cte)

    def value(field, obj):
        v = getattr(obj, field.attname)
        if v is None or isinstance(field, JSONField):
            return v
        return v.isoformat() if isinstance(v, datetime) else v

    return json.dumps([{f.column: value(f, obj) for f in fields} for obj in objs])


def store_in_one_statement(
    *,
    run: Run,
    seen_reports: int | None,
    report: GroundingReport,
    sources: list[RunSource],
    decision: Decision,
    evaluations: list[Evaluation],
) -> bool:
    """Write the report's rows in one statement if the run is still as read (its ``report_count`` is
    ``seen_reports``; None: whatever it is, for a decision that read nothing of the run) and has not
    ended; False otherwise (nothing was written). On success the run, report and decision carry what
    was written."""
    params = {
        # Integers as int8 whatever their size: psycopg would pick int2/int4/int8 by value, and each
        # combination of types is a statement prepared anew.
        "run_id": Int8(run.pk),
        "tenant_id": Int8(run.tenant_id),
        "seen_reports": None if seen_reports is None else Int8(seen_reports),
        "output": report.output,
        # LEAST ignores a NULL: a report without scores leaves worst_score as it was.
        "score": report_score(report.grounding_scores),
        "judge_cost": judge_cost_of(e.metadata for e in evaluations),
        "ranks": json.dumps(SEVERITY),
        "rank": Int8(SEVERITY[decision.action]),
        "action": decision.action,
        "blocks": decision.action == "block",
        "running": Run.Status.RUNNING.value,
        "blocked": Run.Status.BLOCKED.value,
        "sources": _as_json(sources),
        "report": _as_json([report]),
        "decision": _as_json([decision]),
        "evaluations": _as_json(evaluations),
    }
    with prepared_cursor() as cursor:
        cursor.execute(_statement(), params)
        written = cursor.fetchone()
    if written is None:
        return False
    run.report_count, run.status, run.final_action, report.pk, decision.pk = written
    report.seq = run.report_count
    report._state.adding = decision._state.adding = False
    decision.report_id = report.pk
    return True


# --- A run's start in one statement (PostgreSQL) --------------------------------------------------

# Starting a run writes three rows that depend on each other's ids: through the ORM that is five
# round trips (BEGIN, three INSERTs, COMMIT), each statement compiled in Python, which was most of a
# start's CPU in process (docs/benchmarks.md, bench/load.py). One statement writes the same rows,
# prepared once per connection like the report's. LIMIT 1 on the run and the decision (there is one
# of each) is for the planner: it counts 100 rows for every jsonb_to_recordset, and the product of
# three such guesses (10^8 evaluation rows) made PostgreSQL JIT-compile the statement, about 200 ms on
# every start (EXPLAIN ANALYZE).


def _inserts(steps: list[tuple[str, type[Model], str, str, str]], from_cte: dict, select: str) -> str:
    """One statement of INSERT CTEs (name, model, parameter, what it reads, tail), each reading the
    ids the ones before it return, then ``select``."""
    ctes = ", ".join(
        f"{name} AS ({_insert(model, param, sources, tail, from_cte[model])})"
        for name, model, param, sources, tail in steps
    )
    return " ".join(f"WITH {ctes} {select}".split())


@lru_cache(maxsize=1)
def _start_statement() -> str:
    steps = [
        ("run", Run, "run", "", "LIMIT 1 RETURNING id, tenant_id"),
        ("decision", Decision, "decision", "run", "LIMIT 1 RETURNING id"),
        ("evaluation", Evaluation, "evaluations", "run, decision", ""),
    ]
    return _inserts(steps, _START_FROM_CTE, "SELECT run.id, decision.id FROM run, decision")


def store_start_in_one_statement(*, run: Run, decision: Decision, evaluations: list[Evaluation]) -> None:
    """Insert a new run, its first decision and that decision's evaluations in one statement; the run
    and the decision then carry their ids, as ``save()`` would leave them."""
    params = {
        "run": _as_json([run], _START_FROM_CTE[Run]),
        "decision": _as_json([decision], _START_FROM_CTE[Decision]),
        "evaluations": _as_json(evaluations, _START_FROM_CTE[Evaluation]),
    }
    with prepared_cursor() as cursor:
        cursor.execute(_start_statement(), params)
        run.pk, decision.pk = cursor.fetchone()
    decision.run_id = run.pk
    run._state.adding = decision._state.adding = False


# A decision and its evaluations alone (a run's completion), under the caller's transaction: two
# INSERTs through the ORM, the evaluations' metadata quoted parameter by parameter, cost more Python
# than this statement does.
_DECISION_FROM_CTE = {Decision: {}, Evaluation: {"decision_id": "decision.id"}}


@lru_cache(maxsize=1)
def _decision_statement() -> str:
    steps = [
        ("decision", Decision, "decision", "", "LIMIT 1 RETURNING id"),
        ("evaluation", Evaluation, "evaluations", "decision", ""),
    ]
    return _inserts(steps, _DECISION_FROM_CTE, "SELECT decision.id FROM decision")


def store_decision_in_one_statement(*, decision: Decision, evaluations: list[Evaluation]) -> None:
    """Insert a decision of a stored run and its evaluations in one statement; the decision then
    carries its id, as ``save()`` would leave it."""
    params = {
        "decision": _as_json([decision], _DECISION_FROM_CTE[Decision]),
        "evaluations": _as_json(evaluations, _DECISION_FROM_CTE[Evaluation]),
    }
    with prepared_cursor() as cursor:
        cursor.execute(_decision_statement(), params)
        (decision.pk,) = cursor.fetchone()
    decision._state.adding = False
