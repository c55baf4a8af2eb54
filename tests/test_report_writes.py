"""The grounding call's write path: rows built once (governance/rows.py), stored one way per database.

Everywhere, a report is read, decided and written through the ORM under the run's row lock. On
PostgreSQL the first try is an unlocked read and one conditional statement
(governance/report_write.py), and a run changed in between sends the call back under the lock.
Most tests here hold on every database; the ones that compare the PostgreSQL statement with the
ORM run when DATABASE_URL names PostgreSQL (as CI sets it), and say so when skipped.
"""

import threading

import pytest
from django.db import connection, connections
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django_scopes import scope, scopes_disabled

from governance import report_write, services
from governance.judgements import decision_append_evaluations
from governance.models import Decision, Evaluation, GroundingReport, Run, RunSource
from policies.engine import Evaluation as EngineEvaluation

pytestmark = pytest.mark.django_db
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the one-statement write is PostgreSQL's; CI runs this with DATABASE_URL"
)

REPORTS = [
    {
        "grounding_scores": [0.9, 0.8],
        "citations": ["fed", {"source_id": "imf", "quote": "growth slowed"}],
        "unsupported_claims": ["rates fall"],
        "output_confidence": 0.7,
        "output": "first answer",
        "sources": [{"id": "imf", "text": "Growth slowed in 2024.", "score": 0.5}, {"id": "fed", "text": "Rates."}],
    },
    {
        "grounding_scores": [0.3],
        "citations": [],
        "unsupported_claims": [],
        "output_confidence": None,
        "output": "",
        "sources": [{"id": "imf", "text": "Growth slowed in 2024.", "score": 0.7}],
    },
    {
        "grounding_scores": [0.95],
        "citations": ["ecb", {"source_id": "imf", "quote": "rates rose"}],
        "unsupported_claims": ["a", "b"],
        "output_confidence": 0.2,
        "output": "last answer",
        "sources": [{"id": "imf", "text": "Rates rose in 2025."}],
    },
    {},
]


@pytest.fixture
def governed(acme):
    from policies import services as policy_services
    from tenants.audit import Actor

    actor = Actor.system("tests")
    # No score audit: one sampled at random would add its own statements to what these tests count.
    acme.score_audit_rate = 0
    acme.save(update_fields=["score_audit_rate"])
    with scope(tenant=acme):
        policy_services.policy_create(
            tenant=acme,
            actor=actor,
            name="Warn",
            category="grounding",
            scope={},
            rules={
                "min_grounding_score": 0.8,
                "min_citations": 1,
                "max_unsupported_claims": 1,
                "action_on_violation": "warn",
            },
        )
        policy_services.policy_create(
            tenant=acme,
            actor=actor,
            name="Block",
            category="grounding",
            scope={"agents": ["research-*"]},
            rules={"min_grounding_score": 0.5, "action_on_violation": "block", "citations_must_resolve": True},
        )
    acme.refresh_from_db()
    return acme


def _stored(run_id: int) -> dict:
    """Everything a run's reports wrote, without ids and timestamps."""

    def strip(obj, *names):
        return {k: v for k, v in model_to_dict(obj).items() if k not in {"id", "run", "created_at", *names}}

    with scopes_disabled():
        decisions = list(Decision.objects.filter(run_id=run_id).order_by("id"))
        index = {d.pk: n for n, d in enumerate(decisions)}
        reports = list(GroundingReport.objects.filter(run_id=run_id).order_by("seq"))
        return {
            "run": strip(Run.objects.get(pk=run_id), "started_at"),
            "reports": [(strip(r), r.sources) for r in reports],
            "sources": [strip(s) for s in RunSource.objects.filter(run_id=run_id).order_by("id")],
            "decisions": [(strip(d, "report"), d.report.seq if d.report else None) for d in decisions],
            "evaluations": [
                (strip(e, "decision"), index[e.decision_id])
                for e in Evaluation.objects.filter(run_id=run_id).order_by("id")
            ],
        }


def _record(tenant, run_id, report):
    run, decision = services.run_record_grounding(tenant=tenant, run_id=run_id, **report)
    return run.pk, run.status, run.final_action, run.report_count, decision.to_dict()


def _start(tenant) -> int:
    with scope(tenant=tenant):
        return services.run_start(tenant=tenant, agent_name="research-agent")[0].pk


# --- On every database ------------------------------------------------------------------------


def test_sources_are_stored_once_per_run_and_reports_keep_references(governed):
    run_id = _start(governed)
    with scope(tenant=governed):
        for report in REPORTS:
            services.run_record_grounding(tenant=governed, run_id=run_id, **report)

    stored = _stored(run_id)
    # imf's first text is reported twice but stored once; its new text is a second row.
    assert [(s["source_id"], s["text"]) for s in stored["sources"]] == [
        ("imf", "Growth slowed in 2024."),
        ("fed", "Rates."),
        ("imf", "Rates rose in 2025."),
    ]
    # Each report gives back its sources as reported, the per-report score included.
    assert [sources for _, sources in stored["reports"]] == [
        [{"id": "imf", "text": "Growth slowed in 2024.", "score": 0.5}, {"id": "fed", "text": "Rates."}],
        [{"id": "imf", "text": "Growth slowed in 2024.", "score": 0.7}],
        [{"id": "imf", "text": "Rates rose in 2025."}],
        [],
    ]
    assert all("text" not in ref for report, _ in stored["reports"] for ref in report["source_refs"])


def test_mid_execution_resolves_against_every_source_reported_so_far(governed):
    run_id = _start(governed)
    with scope(tenant=governed):
        services.run_record_grounding(tenant=governed, run_id=run_id, sources=[{"id": "fed", "text": "Rates rose."}])
        _, cites_earlier = services.run_record_grounding(
            tenant=governed,
            run_id=run_id,
            grounding_scores=[0.9],
            citations=[{"source_id": "fed", "quote": "rates rose"}],
        )
        _, cites_unknown = services.run_record_grounding(
            tenant=governed, run_id=run_id, grounding_scores=[0.9], citations=["ecb"]
        )

    assert cites_earlier.action == "allow", cites_earlier.reason
    assert cites_unknown.action == "block"
    assert cites_unknown.reason == 'Citation "ecb" does not resolve to a retrieved source'


def test_the_run_row_does_not_grow_with_its_reports(governed):
    run_id = _start(governed)

    def run_row_size() -> int:
        with scopes_disabled():
            return sum(len(str(v)) for v in Run.objects.filter(pk=run_id).values().get().values())

    with scope(tenant=governed):
        services.run_record_grounding(tenant=governed, run_id=run_id, **REPORTS[0])
        after_one = run_row_size()
        for n in range(30):
            services.run_record_grounding(
                tenant=governed,
                run_id=run_id,
                **{**REPORTS[0], "sources": [{"id": f"s{n}", "text": "x" * 1000}], "citations": [f"s{n}"]},
            )
        after_many = run_row_size()

    assert after_many - after_one <= 2  # report_count grew from 1 to 31: two digits
    assert _stored(run_id)["run"]["report_count"] == 31


def test_a_citation_lookup_reads_only_the_cited_sources(governed):
    run_id = _start(governed)
    with scope(tenant=governed):
        for n in range(20):
            services.run_record_grounding(tenant=governed, run_id=run_id, sources=[{"id": f"doc-{n}", "text": "t"}])
        with CaptureQueriesContext(connection) as ctx:
            _, decision = services.run_record_grounding(
                tenant=governed, run_id=run_id, grounding_scores=[0.9], citations=["doc-7"]
            )

    assert decision.action == "allow", decision.reason
    lookups = [
        q["sql"]
        for q in ctx.captured_queries
        if "governance_runsource" in q["sql"] and q["sql"].lstrip().upper().startswith("SELECT")
    ]
    assert len(lookups) == 1
    assert "'doc-7'" in lookups[0] and "'doc-8'" not in lookups[0]


def test_completing_costs_the_same_queries_however_many_reports_came_before(governed):
    def complete_queries(reports: int) -> int:
        run_id = _start(governed)
        with scope(tenant=governed):
            for n in range(reports):
                services.run_record_grounding(
                    tenant=governed,
                    run_id=run_id,
                    grounding_scores=[0.9],
                    citations=[f"doc-{n}"],
                    sources=[{"id": f"doc-{n}", "text": "t"}],
                )
            with CaptureQueriesContext(connection) as ctx:
                services.run_complete(tenant=governed, run_id=run_id, output="done")
        return len(ctx.captured_queries)

    assert complete_queries(2) == complete_queries(25)


def test_late_evaluations_are_stored_by_the_same_mapping_as_the_engines(governed):
    run_id = _start(governed)
    with scope(tenant=governed):
        services.run_record_grounding(tenant=governed, run_id=run_id, grounding_scores=[0.9])
        with scopes_disabled():
            stored = Evaluation.objects.filter(run_id=run_id, phase="mid_execution").order_by("id").first()
        late = EngineEvaluation(
            policy_id=stored.policy_ref,
            policy_name=stored.policy_name,
            category=stored.category,
            policy_version=stored.policy_version,
            phase=stored.phase,
            action="warn",
            reason="Judged late",
            metadata={"score": 0.4},
            source="llm_judge",
        )
        decision_append_evaluations(decision_row=stored.decision, evaluations=[late])

    with scopes_disabled():
        appended = Evaluation.objects.filter(run_id=run_id, source="llm_judge").get()
        run = Run.objects.get(pk=run_id)
    differs = {"id", "created_at", "action", "reason", "metadata", "source"}
    assert {k: v for k, v in model_to_dict(appended).items() if k not in differs} == {
        k: v for k, v in model_to_dict(stored).items() if k not in differs
    }
    assert (appended.action, appended.reason, appended.metadata) == ("warn", "Judged late", {"score": 0.4})
    assert run.final_action == "warn"


# --- PostgreSQL's one statement -----------------------------------------------------------------


@postgresql_only
def test_the_one_statement_write_stores_what_the_orm_stores(governed, monkeypatch):
    fast_run, orm_run = _start(governed), _start(governed)
    with scope(tenant=governed):
        fast = [_record(governed, fast_run, report) for report in REPORTS]
        monkeypatch.setattr(report_write, "in_one_statement", lambda: False)
        orm = [_record(governed, orm_run, report) for report in REPORTS]

    assert [answer[1:] for answer in fast] == [answer[1:] for answer in orm]
    assert fast[-1][1:4] == ("blocked", "block", 4)
    assert _stored(fast_run) == _stored(orm_run)


@postgresql_only
@pytest.mark.parametrize(
    "body",
    [
        {},
        {"workflow_name": "quarterly", "input": {"q": "Ünïcode", "n": [1, 2.5, None, 12345678901234567890123]}},
        {"input": "plain text", "metadata": {"team": "research", "nested": {"ok": True}}},
        {"agent_name": "qa-agent"},  # only the unscoped policy applies
    ],
)
def test_a_start_in_one_statement_stores_what_the_orm_stores(governed, monkeypatch, body):
    from tenants import services as tenant_services
    from tenants.audit import Actor

    key, _ = tenant_services.api_key_create(tenant=governed, name="agent", actor=Actor.system("tests"))
    body = {"agent_name": "research-agent", **body}
    with scope(tenant=governed), CaptureQueriesContext(connection) as one:
        fast, fast_decision = services.run_start(tenant=governed, api_key=key, **body)
    monkeypatch.setattr(report_write, "in_one_statement", lambda: False)
    with scope(tenant=governed):
        orm, orm_decision = services.run_start(tenant=governed, api_key=key, **body)

    writes = [q["sql"] for q in one.captured_queries if "INSERT" in q["sql"] or "SAVEPOINT" in q["sql"]]
    assert len(writes) == 1 and "SAVEPOINT" not in writes[0]  # one statement, no transaction around it
    assert fast.pk and not fast._state.adding and fast.report_count == 0
    assert fast_decision.to_dict() == orm_decision.to_dict()
    assert _stored(fast.pk) == _stored(orm.pk)
    with scopes_disabled():
        stored = Run.objects.get(pk=fast.pk)
        assert stored.started_at == fast.started_at and stored.api_key_id == key.pk
        decided_at = Decision.objects.get(run_id=fast.pk).created_at
        assert {e.created_at for e in Evaluation.objects.filter(run_id=fast.pk)} == {decided_at}


@postgresql_only
@pytest.mark.parametrize("ending", [{"output": "final answer", "result": {"n": [1, None]}}, {"error": "crashed"}, {}])
def test_a_completion_in_one_statement_stores_what_the_orm_stores(governed, monkeypatch, ending):
    fast_run, orm_run = _start(governed), _start(governed)
    with scope(tenant=governed):
        for report in REPORTS[:2]:
            _record(governed, fast_run, report)
        fast = services.run_complete(tenant=governed, run_id=fast_run, **ending)
        monkeypatch.setattr(report_write, "in_one_statement", lambda: False)
        for report in REPORTS[:2]:
            _record(governed, orm_run, report)
        orm = services.run_complete(tenant=governed, run_id=orm_run, **ending)

    assert fast[1].to_dict() == orm[1].to_dict() and fast[0].status == orm[0].status
    fast_rows, orm_rows = _stored(fast_run), _stored(orm_run)
    assert fast_rows["run"].pop("ended_at") and orm_rows["run"].pop("ended_at")
    assert fast_rows["run"].pop("duration_ms") is not None and orm_rows["run"].pop("duration_ms") is not None
    assert fast_rows == orm_rows
    with scopes_disabled():
        assert Run.objects.get(pk=fast_run).ended_at == fast[0].ended_at


@postgresql_only
def test_a_report_that_lands_between_the_read_and_the_write_sends_the_call_down_the_locked_path(governed, monkeypatch):
    tenant = governed
    read, lock = report_write.read_run, services.run_for
    events = []

    def read_then_get_overtaken(**kwargs):
        run = read(**kwargs)
        events.append("read")
        if events == ["read"]:  # another call reports the source we cite after our read, before our write
            services.run_record_grounding(
                tenant=tenant,
                run_id=kwargs["run_id"],
                grounding_scores=[0.9],
                sources=[{"id": "fed", "text": "Rates rose in March."}],
                unsupported_claims=["one"],
            )
        return run

    def counted_lock(*args, **kwargs):
        if kwargs.get("for_update"):
            events.append("locked")
        return lock(*args, **kwargs)

    monkeypatch.setattr(report_write, "read_run", read_then_get_overtaken)
    monkeypatch.setattr(services, "run_for", counted_lock)
    run_id = _start(tenant)
    with scope(tenant=tenant):
        run, decision = services.run_record_grounding(
            tenant=tenant, run_id=run_id, grounding_scores=[0.95], citations=["fed"], unsupported_claims=["two"]
        )

    # Our first write found the run changed and wrote nothing; the locked try decided again, on the
    # state with the other report in it, so the citation resolves (it did not when first read). The
    # other report (no citation) went into a run this process started without reading it at all.
    assert events == ["read", "locked"]
    assert decision.action == "allow", decision.reason
    assert run.report_count == 2
    stored = _stored(run_id)
    assert [(report["seq"], report["citations"]) for report, _ in stored["reports"]] == [(1, []), (2, ["fed"])]
    assert [s["source_id"] for s in stored["sources"]] == ["fed"]
    assert [seq for _, seq in stored["decisions"]] == [None, 1, 2]
    assert [e["action"] for e, n in stored["evaluations"] if n == 2] == ["allow", "allow"]
    assert len(stored["evaluations"]) == 3 * 2


@postgresql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("citations", [["shared"], []], ids=["read-then-write", "known-run-written-unread"])
def test_concurrent_reports_to_one_run_are_numbered_and_stored_once(governed, citations):
    # Without a citation to resolve, each report goes into the run this process started unread.
    run_id = _start(governed)
    errors = []

    def reporter(worker: int) -> None:
        try:
            with scope(tenant=governed):
                for n in range(8):
                    services.run_record_grounding(
                        tenant=governed,
                        run_id=run_id,
                        grounding_scores=[0.9],
                        citations=citations,
                        sources=[{"id": "shared", "text": "Same text."}, {"id": f"w{worker}-{n}", "text": "own"}],
                    )
        except Exception as exc:  # reported below: an assertion in a thread would be lost
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=reporter, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    with scopes_disabled():
        assert sorted(GroundingReport.objects.filter(run_id=run_id).values_list("seq", flat=True)) == list(range(1, 49))
        assert Run.objects.get(pk=run_id).report_count == 48
        assert RunSource.objects.filter(run_id=run_id, source_id="shared").count() == 1
        assert RunSource.objects.filter(run_id=run_id).count() == 1 + 48
        assert Decision.objects.filter(run_id=run_id, phase="mid_execution").count() == 48


# --- PostgreSQL: a run this process knows is written without being read -------------------------

NO_STATE = {"grounding_scores": [0.9], "unsupported_claims": ["one"], "sources": [{"id": "fed", "text": "Rates."}]}


def _statements(tenant, run_id, report, **kwargs) -> tuple[list[str], tuple]:
    """What a report sent: "write" (the one statement), "read run" or another query, and its answer.
    (A report the score audit samples queues its audit after the write: "other".)"""

    def kind(sql: str) -> str:
        if "WITH run AS" in sql:
            return "write"
        return "read run" if 'FROM "governance_run"' in sql else "other"

    with scope(tenant=tenant), CaptureQueriesContext(connection) as queries:
        answer = _record(tenant, run_id, {**report, **kwargs})
    return [kind(q["sql"]) for q in queries.captured_queries], answer


@postgresql_only
def test_a_report_that_reads_nothing_of_a_known_run_is_one_statement(governed):
    run_id = _start(governed)  # this process started it, so it knows its tenant, agent and key
    statements, answer = _statements(governed, run_id, NO_STATE, grounding_scores=[0.6])  # below Warn's 0.8
    assert statements[0] == "write" and "read run" not in statements
    assert answer[1:4] == ("running", "warn", 1)  # the run's status, final action and count, as written

    # A citation to resolve reads the run's sources: the run is read first, as before.
    statements, answer = _statements(governed, run_id, NO_STATE, citations=["fed"])
    assert statements[0] == "read run" and statements[-1] == "write"
    assert answer[3] == 2
    assert [seq for _, seq in _stored(run_id)["decisions"]] == [None, 1, 2]


@postgresql_only
def test_an_unknown_run_is_read_then_known(governed):
    run_id = _start(governed)
    report_write.forget_known_runs()  # as in another process than the one that started it
    assert _statements(governed, run_id, NO_STATE)[0][:2] == ["read run", "write"]
    statements = _statements(governed, run_id, NO_STATE)[0]
    assert statements[0] == "write" and "read run" not in statements


@postgresql_only
def test_a_known_run_that_ended_is_still_refused_with_the_contracts_conflict(governed):
    from core.errors import Conflict

    run_id = _start(governed)
    _record(governed, run_id, NO_STATE)
    with scope(tenant=governed):
        services.run_complete(tenant=governed, run_id=run_id, output="done")
        with pytest.raises(Conflict, match=rf"^Run {run_id} is already \w+; it accepts no more grounding reports\.$"):
            _record(governed, run_id, NO_STATE)
    assert len(_stored(run_id)["reports"]) == 1


@postgresql_only
def test_a_known_run_is_404_to_another_tenant_another_agent_key_and_once_deleted(governed, globex):
    from django.http import Http404

    from tenants import services as tenant_services
    from tenants.audit import Actor

    actor = Actor.system("tests")
    starter, _ = tenant_services.api_key_create(tenant=governed, name="starter", actor=actor, scope="agent")
    other, _ = tenant_services.api_key_create(tenant=governed, name="other", actor=actor, scope="agent")
    with scope(tenant=governed):
        run_id = services.run_start(tenant=governed, api_key=starter, agent_name="research-agent")[0].pk
        services.run_record_grounding(tenant=governed, run_id=run_id, owner_key_id=starter.pk, **NO_STATE)
        with pytest.raises(Http404):
            services.run_record_grounding(tenant=governed, run_id=run_id, owner_key_id=other.pk, **NO_STATE)
    with scope(tenant=globex), pytest.raises(Http404):
        services.run_record_grounding(tenant=globex, run_id=run_id, **NO_STATE)
    with scopes_disabled():
        Run.objects.filter(pk=run_id).delete()
    with scope(tenant=governed), pytest.raises(Http404):
        services.run_record_grounding(tenant=governed, run_id=run_id, owner_key_id=starter.pk, **NO_STATE)
    with scopes_disabled():
        assert GroundingReport.objects.filter(run_id=run_id).count() == 0


# --- Completing: the inline judges run before the run's row lock --------------------------------


@pytest.fixture
def verified(acme, make_policy):
    """A tenant whose after_workflow runs the local verifier inline (it may block, so the agent waits)."""
    make_policy(
        name="Verified",
        rules={"nli_check": True, "nli_phase": "after_workflow", "min_citations": 0, "min_grounding_score": None},
    )
    acme.refresh_from_db()
    return acme


def _judged_calls(monkeypatch, between=None) -> list[dict]:
    """Record each inline judging at after_workflow: was a transaction open, what output and sources it read."""
    calls = []
    judge = services.judging.inline_evaluations

    def recorded(**kwargs):
        calls.append(
            {
                "in_transaction": connection.in_atomic_block,
                "output": kwargs["evidence"].output,
                "sources": [s["id"] for s in kwargs["evidence"].sources],
            }
        )
        if between and len(calls) == 1:
            between()
        return judge(**kwargs)

    monkeypatch.setattr(services.judging, "inline_evaluations", recorded)
    return calls


@pytest.mark.django_db(transaction=True)
def test_the_after_workflow_verifier_runs_before_the_completing_transaction(verified, monkeypatch):
    run_id = _start(verified)
    with scope(tenant=verified):
        services.run_record_grounding(
            tenant=verified, run_id=run_id, grounding_scores=[0.9], sources=[{"id": "fed", "text": "Rates rose."}]
        )
        calls = _judged_calls(monkeypatch)
        run, decision = services.run_complete(tenant=verified, run_id=run_id, output="Rates rose.")

    assert calls == [{"in_transaction": False, "output": "Rates rose.", "sources": ["fed"]}]
    verifier = [e for e in decision.all_evaluations if e.source == "verifier"]
    assert len(verifier) == 1 and verifier[0].policy_name == "Verified"
    assert run.status == "completed"


@pytest.mark.django_db(transaction=True)
def test_a_report_that_lands_while_the_verifier_runs_is_judged_again_under_the_lock(verified, monkeypatch):
    run_id = _start(verified)

    def another_report():
        services.run_record_grounding(
            tenant=verified, run_id=run_id, grounding_scores=[0.9], sources=[{"id": "imf", "text": "Growth slowed."}]
        )

    with scope(tenant=verified):
        calls = _judged_calls(monkeypatch, between=another_report)
        run, decision = services.run_complete(tenant=verified, run_id=run_id, output="Growth slowed.")

    # The first judging read a run without the report; the decision rests on the second, which has it.
    assert calls == [
        {"in_transaction": False, "output": "Growth slowed.", "sources": []},
        {"in_transaction": True, "output": "Growth slowed.", "sources": ["imf"]},
    ]
    assert run.report_count == 1
    assert len([e for e in decision.all_evaluations if e.source == "verifier"]) == 1
    with scopes_disabled():
        stored = Evaluation.objects.filter(run_id=run_id, phase="after_workflow", source="verifier")
        assert stored.count() == 1


def test_a_failed_run_and_a_completed_one_judge_nothing(verified, monkeypatch):
    from core.errors import Conflict

    run_id = _start(verified)
    with scope(tenant=verified):
        calls = _judged_calls(monkeypatch)
        services.run_complete(tenant=verified, run_id=run_id, error="crashed")
        with pytest.raises(Conflict, match=r"^Run \d+ is already failed; a run completes once\.$"):
            services.run_complete(tenant=verified, run_id=run_id, output="late")
    assert calls == []
