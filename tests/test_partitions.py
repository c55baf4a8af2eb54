"""Partitioned history (issue 15 item 2): on PostgreSQL, reports, spans, evaluations and the audit log
are range-partitioned by month of created_at (core/partitions.py); SQLite keeps plain tables."""

import re
import time
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_scopes import scope, scopes_disabled
from pages_support import bulk_violations, signed_in

from config.celery import app
from core.partitions import (
    default_partition_name,
    drop_partition,
    ensure_partitions,
    partition_name,
    partition_table,
    partitioned_tables,
    partitions,
    partitions_older_than,
    unpartition_table,
)
from governance.models import Evaluation, GroundingReport, Run, Span
from governance.selectors.lists import PAGE_SIZE, violation_list
from governance.tasks import ensure_partitions as ensure_partitions_task
from tenants.audit import Actor, audit_chain_verify, audit_record
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="partitioning is PostgreSQL's; SQLite keeps plain tables"
)

HISTORY = {
    "governance_groundingreport": "created_at",
    "governance_span": "created_at",
    "governance_evaluation": "created_at",
    "governance_auditevent": "created_at",
}
EVALUATIONS = "governance_evaluation"


def _utc(year, month, day=1, hour=0):
    return datetime(year, month, day, hour, tzinfo=UTC)


def _home(model, pk) -> str:
    """The partition a row is stored in."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {model._meta.db_table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def _evaluation(tenant, run, *, at, action="warn") -> Evaluation:
    with scopes_disabled():
        return Evaluation.objects.create(
            tenant=tenant,
            run=run,
            policy_name="P",
            category="grounding",
            agent_name=run.agent_name,
            phase="mid_execution",
            action=action,
            created_at=at,
        )


@pytest.fixture
def run(acme):
    with scopes_disabled():
        return Run.objects.create(tenant=acme, agent_name="research-agent")


@pytest.fixture
def months_2026():
    """Partitions for January to December 2026 on every history table (the test's transaction
    takes them away again)."""
    ensure_partitions(months_ahead=11, now=_utc(2026, 1, 15))


@pytest.mark.skipif(connection.vendor == "postgresql", reason="on PostgreSQL the tables are partitioned")
def test_sqlite_keeps_plain_tables():
    assert partitioned_tables() == {}
    assert ensure_partitions() == []


@postgres_only
def test_history_tables_are_partitioned_by_month_of_created_at():
    assert partitioned_tables() == HISTORY
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
            "WHERE p.partstrat = 'r' ORDER BY 1"
        )
        assert [row[0] for row in cursor.fetchall()] == sorted(HISTORY)
    for table in HISTORY:
        # The migration made this month and three ahead, and a default partition.
        this_month = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        starts = [p.start for p in partitions(table)]
        assert this_month in starts and len([s for s in starts if s >= this_month]) >= 4
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [default_partition_name(table)])
            assert cursor.fetchone()[0]


@postgres_only
def test_rows_land_in_their_months_partition(acme, run, months_2026):
    march = _evaluation(acme, run, at=_utc(2026, 3, 31, 23))
    april = _evaluation(acme, run, at=_utc(2026, 4, 1))
    assert _home(Evaluation, march.pk) == partition_name(EVALUATIONS, _utc(2026, 3).date())
    assert _home(Evaluation, april.pk) == "governance_evaluation_p202604"
    with scopes_disabled():
        report = GroundingReport.objects.create(tenant=acme, run=run, seq=1, created_at=_utc(2026, 5, 9))
        span = Span.objects.create(tenant=acme, run=run, kind="tool", name="search", created_at=_utc(2026, 6, 2))
    assert _home(GroundingReport, report.pk) == "governance_groundingreport_p202605"
    assert _home(Span, span.pk) == "governance_span_p202606"
    # Ids keep coming from one sequence across partitions, and the ORM reads a row by id as before.
    assert april.pk == march.pk + 1
    with scopes_disabled():
        assert Evaluation.objects.get(pk=march.pk).created_at == _utc(2026, 3, 31, 23)


@postgres_only
def test_a_row_far_in_the_future_goes_to_the_default_partition(acme, run):
    far = _evaluation(acme, run, at=_utc(2099, 1, 1))
    assert _home(Evaluation, far.pk) == default_partition_name(EVALUATIONS)
    # Its month is then not made (that would mean moving the row), and saying so is not an error.
    assert partition_name(EVALUATIONS, _utc(2099, 1).date()) not in ensure_partitions(now=_utc(2098, 12, 1))
    assert partition_name(EVALUATIONS, _utc(2098, 12).date()) in [p.name for p in partitions(EVALUATIONS)]


@postgres_only
def test_ensure_partitions_makes_months_ahead_and_is_idempotent():
    now = datetime.now(UTC)
    before = {table: {p.name for p in partitions(table)} for table in HISTORY}
    made = ensure_partitions(months_ahead=5, now=now)
    month = now.date().replace(day=1)
    wanted = [month]
    for _ in range(5):
        month = (month + timedelta(days=32)).replace(day=1)
        wanted.append(month)
    for table in HISTORY:
        names = {p.name for p in partitions(table)}
        assert {partition_name(table, m) for m in wanted} <= names
        assert names - before[table] == {name for name in made if name.startswith(f"{table}_p")}
    # The migration made three months ahead, so the fourth and fifth are new.
    assert partition_name(EVALUATIONS, wanted[5]) in made
    assert ensure_partitions(months_ahead=5, now=now) == []


@postgres_only
def test_ensure_partitions_command_and_task(months_2026):
    out = StringIO()
    call_command("ensure_partitions", months_ahead=2, stdout=out)
    assert "Every partition needed exists already." in out.getvalue()
    assert "governance_evaluation: " in out.getvalue()
    assert ensure_partitions_task.delay(months_ahead=1).get() == []


@pytest.mark.parametrize("months", [-1, 121, 10**6])
def test_ensure_partitions_refuses_a_horizon_out_of_range(months):
    with pytest.raises(CommandError, match="--months-ahead must be from 0 to 120"):
        call_command("ensure_partitions", months_ahead=months)


@postgres_only
def test_dropping_a_partition_removes_that_month_only(acme, run, months_2026):
    january = [_evaluation(acme, run, at=_utc(2026, 1, d)) for d in (1, 15, 31)]
    february = [_evaluation(acme, run, at=_utc(2026, 2, d)) for d in (1, 28)]
    old = partitions_older_than(EVALUATIONS, _utc(2026, 2, 10))
    assert [p.name for p in old] == ["governance_evaluation_p202601"]
    assert all(p.end <= _utc(2026, 2, 10) for p in old)

    drop_partition(old[0].name)

    with scopes_disabled():
        left = set(Evaluation.objects.filter(run=run).values_list("id", flat=True))
    assert left == {e.pk for e in february}
    assert not {e.pk for e in january} & left
    assert "governance_evaluation_p202601" not in [p.name for p in partitions(EVALUATIONS)]
    with pytest.raises(ValueError):
        drop_partition("governance_run")


@postgres_only
def test_audit_chain_appends_and_verifies_on_the_partitioned_log(acme):
    """The chain's head lock is on the tenant row, so partitioning the log changes nothing for it."""
    for n in range(3):
        audit_record(tenant=acme, action=f"test.thing.{n}", actor=Actor.system(), object_type="test", object_id=n)
    with scopes_disabled():
        rows = list(AuditEvent.objects.filter(tenant=acme).order_by("seq"))
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1)) and len(rows) >= 3
    assert _home(AuditEvent, rows[-1].pk).startswith("governance_auditevent_p")
    with scope(tenant=acme):
        assert audit_chain_verify(tenant=acme).ok
    # Still append-only in the database: the trigger reaches every partition.
    with pytest.raises(Exception, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE governance_auditevent SET action = 'x' WHERE id = %s", [rows[-1].pk])


# --- the violations page across partitions ----------------------------------------------------


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<a href="/violations/(\d+)/" aria-label="Violation', html)]


def _walk(client, url):
    pages = []
    while url:
        html = client.get(url).content.decode()
        pages.append(_ids(html))
        older = re.search(r'href="\?((?:[^"]*&amp;)?before=\d+)"', html)
        url = "/violations/?" + older.group(1).replace("&amp;", "&") if older else None
    return pages


@postgres_only
def test_violations_keyset_pages_are_the_same_across_a_month_boundary(alice, acme, run, months_2026):
    # 260 violations, half in March and half in April, plus one written late with an old time: the
    # pages follow ids, whichever partitions the rows are in.
    ids = bulk_violations(
        acme,
        count=390,
        run=run,
        start=_utc(
            2026,
            3,
            31,
            23,
        )
        + timedelta(minutes=56),
    )
    late = _evaluation(acme, run, at=_utc(2026, 2, 3), action="block")
    with scopes_disabled():
        homes = {_home(Evaluation, pk) for pk in (ids[0], ids[-1], late.pk)}
        violations = Evaluation.objects.filter(tenant=acme, action__in=("warn", "block"))
        expected = list(violations.order_by("-id").values_list("id", flat=True))
    assert homes == {"governance_evaluation_p202602", "governance_evaluation_p202603", "governance_evaluation_p202604"}
    pages = _walk(signed_in(alice), "/violations/")
    assert [pk for page in pages for pk in page] == expected
    assert expected[:PAGE_SIZE] == pages[0] and len(pages) == 6


def _seed_evaluations(tenant, run, *, rows: int, months: int, end: datetime) -> None:
    """`rows` evaluations spread evenly over the `months` months before `end`, one statement."""
    seconds = int(timedelta(days=30 * months).total_seconds())
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO governance_evaluation (tenant_id, run_id, policy_name, policy_version, category,
                agent_name, phase, action, reason, metadata, source, shadow, created_at, review_state,
                review_comment)
            SELECT %(tenant)s, %(run)s, 'P', 1, 'grounding', 'bulk-agent', 'mid_execution',
                   (ARRAY['allow', 'allow', 'warn', 'block'])[1 + i %% 4], '', '{}', 'engine', false,
                   %(end)s::timestamptz - make_interval(secs => %(seconds)s::float8 * (%(rows)s - i) / %(rows)s),
                   'pending', ''
              FROM generate_series(1, %(rows)s) AS i
            """,
            {"tenant": tenant.pk, "run": run.pk, "end": end, "seconds": seconds, "rows": rows},
        )
        cursor.execute("ANALYZE governance_evaluation")


@postgres_only
def test_violations_page_query_merges_index_scans_over_partitions(acme, run, months_2026, capsys):
    """~200k evaluations over six months: a page is a Merge Append of each month's backward index
    scan stopping after 51 rows, never a scan of the table and a sort; a time filter prunes months."""
    _seed_evaluations(acme, run, rows=200_000, months=6, end=_utc(2026, 7, 25))
    with scopes_disabled():
        newest = Evaluation.objects.filter(tenant=acme).order_by("-id").values_list("id", flat=True)[0]
        base = Evaluation.objects.filter(tenant=acme, shadow=False).defer("metadata")
        page = base.filter(action="block", id__lt=newest - 100_000).order_by("-id")[: PAGE_SIZE + 1]
        plan = page.explain(analyze=True)
        recent = base.filter(action="warn", created_at__gte=_utc(2026, 6, 1)).order_by("-id")[: PAGE_SIZE + 1]
        pruned = recent.explain()

        started = time.perf_counter()
        for before in (None, newest - 50_000, newest - 100_000, newest - 150_000):
            _, result = violation_list(tenant=acme, data={}, before=before)
            assert len(result.rows) == PAGE_SIZE
        per_page_ms = (time.perf_counter() - started) * 1000 / 4

    assert "Merge Append" in plan and "Index Scan" in plan, plan
    assert "Seq Scan" not in plan and not re.search(r"^\s*(->\s*)?Sort\b(?! Key)", plan, re.MULTILINE), plan
    months_scanned = set(re.findall(r"governance_evaluation_p(\d{6})", plan))
    assert len(months_scanned) >= 6, plan
    execution_ms = float(re.search(r"Execution Time: ([\d.]+) ms", plan).group(1))
    assert execution_ms < 50, plan
    # created_at >= June: only June onwards (and the default partition) are read.
    read = set(re.findall(r"governance_evaluation_p(\d{6})", pruned))
    assert read and min(read) == "202606", pruned
    with capsys.disabled():
        print(
            f"\n[partitions] violations page: EXPLAIN ANALYZE {execution_ms:.2f} ms; "
            f"selector {per_page_ms:.1f} ms/page over 200k rows in {len(months_scanned)} partitions"
        )


def test_beat_makes_partitions_daily():
    [entry] = [e for e in app.conf.beat_schedule.values() if e["task"] == "governance.ensure_partitions"]
    assert entry["schedule"].hour == {2}


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_table_without_a_default_partition_is_detached_concurrently():
    """DETACH ... CONCURRENTLY needs autocommit and no default partition (a table made elsewhere)."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE scratch_history (id int, created_at timestamptz) PARTITION BY RANGE (created_at)")
        try:
            for name, start, end in (("p202601", "2026-01-01", "2026-02-01"), ("p202602", "2026-02-01", "2026-03-01")):
                cursor.execute(
                    f"CREATE TABLE scratch_history_{name} PARTITION OF scratch_history"
                    f" FOR VALUES FROM ('{start} 00:00+00') TO ('{end} 00:00+00')"
                )
            cursor.execute("INSERT INTO scratch_history VALUES (1, '2026-01-10'), (2, '2026-02-10')")
            [january] = partitions_older_than("scratch_history", _utc(2026, 2))
            with CaptureQueriesContext(connection) as queries:
                drop_partition(january.name)
            assert any("DETACH PARTITION" in q["sql"] and "CONCURRENTLY" in q["sql"] for q in queries)
            cursor.execute("SELECT id FROM scratch_history")
            assert cursor.fetchall() == [(2,)]
        finally:
            cursor.execute("DROP TABLE scratch_history")


@postgres_only
def test_a_unique_index_outside_a_constraint_is_partitioned_with_the_key_and_back():
    # Django's UniqueConstraint with a condition is a unique index that no constraint backs.
    table = "zz_partition_probe"
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {table} (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
            " run_id bigint NOT NULL, seq integer NOT NULL, live boolean NOT NULL, created_at timestamptz NOT NULL)"
        )
        cursor.execute(f"CREATE UNIQUE INDEX zz_live_seq ON {table} (run_id, lower(seq::text)) WHERE live")
        cursor.execute(f"INSERT INTO {table} (run_id, seq, live, created_at) VALUES (1, 1, true, '2026-01-05')")

    def index_def():
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'zz_live_seq'")
            return cursor.fetchone()[0]

    def insert(seq, live, at):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (run_id, seq, live, created_at) VALUES (1, %s, %s, %s)", [seq, live, at]
            )

    with connection.schema_editor() as editor:
        partition_table(editor, table, "created_at", months_ahead=0)
    assert partitioned_tables()[table] == "created_at"
    assert re.search(
        r"UNIQUE INDEX zz_live_seq ON ONLY public.zz_partition_probe .*"
        r"\(run_id, lower\(\(seq\)::text\), created_at\) WHERE live",
        index_def(),
    )
    with pytest.raises(Exception, match="duplicate key value"):
        insert(1, True, "2026-01-05")  # the same live row in the same moment: still unique
    insert(1, False, "2026-01-05")  # the condition kept: a row it does not cover is free

    with connection.schema_editor() as editor:
        unpartition_table(editor, table)
    assert table not in partitioned_tables()
    assert re.search(
        r"UNIQUE INDEX zz_live_seq ON public.zz_partition_probe .*"
        r"\(run_id, lower\(\(seq\)::text\)\) WHERE live",
        index_def(),
    )
    with pytest.raises(Exception, match="duplicate key value"):
        insert(1, True, "2026-03-01")  # plain again: unique whatever the moment
