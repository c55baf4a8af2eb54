"""Replay (issue 11 item 2), the stored-data part: read a tenant's past runs and reports in a window
and hand them to the pure replayer (policies/replay.py), which runs the same engine.

Accumulated state (claims, sources, confidence) is rebuilt from the reports themselves, in their
order, not read from the Run row. Per chunk of runs, besides the runs and reports: the results
of their retrieval spans (one query; for runs that have some, when each report came), and, only
when a policy of the plan asks for a judge, the judges' stored evaluations (one query). A window
of more than REPLAY_SYNC_MAX_REPORTS reports becomes a ReplayJob that Celery runs, saving its
progress after every chunk of runs.
"""

import json
from dataclasses import asdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django_scopes import scope

from core.errors import InvalidInput
from core.routing import read_alias, replica_reads
from core.text import text_problem
from policies import judged
from policies.access import policy_for
from policies.categories import CATEGORIES, RuleValidationError, UnknownCategory, get_category
from policies.engine import PolicySpec
from policies.models import PolicyVersion
from policies.replay import Judged, ReportRow, RunRow, enforced_only, replay, with_candidate
from policies.scope import MAX_AGENTS, clean_scope
from policies.selectors import policy_specs_for
from tenants.models import Tenant

from .filters import OUT_OF_RANGE_IN_UTC
from .models import SOURCE_HASH, Evaluation, GroundingReport, ReplayJob, Run, RunSource, source_from_ref
from .retrieval import retrieved_sources_of_runs

DEFAULT_WINDOW = timedelta(days=7)
RUN_CHUNK = 2000
KEYS = {"policy", "policy_id", "version", "since", "until", "agents"}
CANDIDATE_KEYS = {"category", "rules", "scope", "name"}
CANDIDATE_ID = 0  # a candidate that is not saved has no id; 0 is none of the tenant's policies
# A report's columns in ReportRow's order (its source references last, turned into sources).
REPORT_FIELDS = (
    "grounding_scores",
    "citations",
    "unsupported_claims",
    "output_confidence",
    "output",
    "score_inflation",
    "source_refs",
)


def sync_limit() -> int:
    return int(getattr(settings, "REPLAY_SYNC_MAX_REPORTS", 100_000))


def _time(value, field: str, errors: dict) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:  # well formed but no such moment ("…T10:60:00"): Django raises, not None
        parsed = None
    if parsed is None:
        errors[field] = ["Must be an ISO 8601 date and time, such as 2026-11-01T00:00:00Z."]
        return None
    # In UTC: PostgreSQL refuses offsets past about ±16 h, which Python accepts (governance/filters.py).
    try:
        if timezone.is_aware(parsed):
            return parsed.astimezone(timezone.UTC)
        return timezone.make_aware(parsed, timezone.UTC)
    except OverflowError:  # "0001-01-01T00:00:00+05:00" is before year 1 in UTC: Python cannot hold it
        errors[field] = [OUT_OF_RANGE_IN_UTC]
        return None


def _candidate_from_body(raw, policy_id, errors: dict) -> PolicySpec | None:
    if not isinstance(raw, dict):
        errors["policy"] = ['Must be an object {"category", "rules", "scope"}.']
        return None
    unknown = [key for key in raw if key not in CANDIDATE_KEYS]
    if unknown:
        errors["policy"] = {str(key): ["Unknown field."] for key in unknown}
        return None
    try:
        category = get_category(raw.get("category"))
    except UnknownCategory:
        errors["policy"] = {"category": [f"Must be one of: {', '.join(sorted(CATEGORIES))}."]}
        return None
    problems: dict = {}
    try:
        rules = category.clean_rules({} if raw.get("rules") is None else raw["rules"])
    except RuleValidationError as exc:
        problems["rules"] = exc.errors
    try:
        scope = clean_scope(raw.get("scope"))
    except RuleValidationError as exc:
        problems["scope"] = exc.errors.get("scope") or exc.errors
    if problems:
        errors["policy"] = problems
        return None
    name = raw.get("name") if isinstance(raw.get("name"), str) and raw.get("name") else "Candidate"
    return PolicySpec(
        id=policy_id or CANDIDATE_ID,
        name=name,
        category=category.name,
        version=0,
        rules=category.effective_rules(rules),
        agents=tuple(scope["agents"]),
    )


def _candidate_from_version(tenant: Tenant, policy_id, version, errors: dict) -> PolicySpec | None:
    policy = policy_for(tenant, policy_id)  # another tenant's policy is a 404
    if version is None:
        version = policy.version
    if type(version) is not int or version < 1:
        errors["version"] = ["Must be a whole number of at least 1."]
        return None
    stored = PolicyVersion.objects.filter(tenant=tenant, policy_ref=policy.pk, version=version).first()
    if stored is None:
        errors["version"] = [f"Policy {policy.pk} has no version {version}."]
        return None
    snap = stored.snapshot
    try:
        category = get_category(snap.get("category"))
    except UnknownCategory:
        errors["version"] = [f"Version {version} has a category this server no longer knows."]
        return None
    return PolicySpec(
        id=policy.pk,
        name=snap.get("name") or policy.name,
        category=category.name,
        version=version,
        rules=category.effective_rules(snap.get("rules") or {}),
        agents=tuple((snap.get("scope") or {}).get("agents") or ()),
    )


def replay_request(*, tenant: Tenant, data) -> dict:
    """Validate a replay request; returns the plan (window, agents, before/after specs). 400s name the field."""
    if not isinstance(data, dict):
        raise InvalidInput({"non_field_errors": ["Expected a JSON object."]})
    errors: dict = {key: ["Unknown field."] for key in data if key not in KEYS}
    policy_id = data.get("policy_id")
    if policy_id is not None and (type(policy_id) is not int or policy_id < 1):
        errors["policy_id"] = ["Must be a policy id."]
        policy_id = None
    candidate = None
    if "policy" in data:
        if policy_id is not None:
            policy_for(tenant, policy_id)
        if data.get("version") is not None:
            # Silently replaying the body instead of the version asked for would answer another question.
            errors["version"] = ['Give either a candidate "policy" or "policy_id" with "version", not both.']
        candidate = _candidate_from_body(data["policy"], policy_id, errors)
    elif policy_id is not None:
        candidate = _candidate_from_version(tenant, policy_id, data.get("version"), errors)
    elif "policy_id" not in errors:
        errors["policy"] = ['Give a candidate {"policy": {...}} or {"policy_id": N, "version": V}.']
    since, until = _time(data.get("since"), "since", errors), _time(data.get("until"), "until", errors)
    agents = data.get("agents")
    if agents is not None and (
        not isinstance(agents, list)
        or len(agents) > MAX_AGENTS
        or not all(isinstance(a, str) and a and len(a) <= 200 for a in agents)
    ):
        errors["agents"] = [f"Must be a list of at most {MAX_AGENTS} agent names."]
    elif agents:
        # The names go to the database as a filter, which refuses NUL and lone surrogates (a 500).
        problems = [f"Item {i + 1}: {text_problem(a)}" for i, a in enumerate(agents) if text_problem(a)]
        if problems:
            errors["agents"] = problems
    if errors:
        raise InvalidInput(errors)
    until = until or timezone.now()
    if since is None:
        try:
            since = until - DEFAULT_WINDOW
        except OverflowError:  # an until in year 1's first week: the window starts where time does
            since = datetime.min.replace(tzinfo=timezone.UTC)
    if since >= until:
        raise InvalidInput({"until": ["Must be after since."]})
    before = enforced_only(policy_specs_for(tenant))
    return {
        "since": since.isoformat(),
        "until": until.isoformat(),
        "agents": agents or [],
        "before": [asdict(s) for s in before],
        "after": [asdict(s) for s in with_candidate(before, candidate)],
    }


def _runs(tenant_id: int, plan: dict):
    runs = Run.objects.filter(
        tenant_id=tenant_id, started_at__gte=parse_datetime(plan["since"]), started_at__lt=parse_datetime(plan["until"])
    )
    if plan["agents"]:
        runs = runs.filter(agent_name__in=plan["agents"])
    return runs


def report_count(*, tenant_id: int, plan: dict) -> int:
    return GroundingReport.objects.filter(tenant_id=tenant_id, run__in=_runs(tenant_id, plan).values("id")).count()


# PostgreSQL: each run with its reports as one JSON array, so a chunk is one query and one
# json.loads per run instead of the ORM decoding four JSON columns per report (bench/replay.py:
# the reads went from more than half of a replay's time to about a third).
_PG_CHUNK_SQL = """
SELECT r.id, r.agent_name, (r.ended_at IS NOT NULL AND r.error = '') AS completed, r.output,
       (SELECT json_agg(json_build_array(g.grounding_scores, g.citations, g.unsupported_claims,
                                         g.output_confidence, g.output, g.score_inflation, g.source_refs)
                        ORDER BY g.seq)
        FROM governance_groundingreport g WHERE g.run_id = r.id)::text
FROM governance_run r
WHERE r.tenant_id = %s AND r.started_at >= %s AND r.started_at < %s AND r.id > %s {agents}
ORDER BY r.id LIMIT %s
"""


_PG_RETRIEVING_SQL = """
SELECT DISTINCT run_id FROM governance_span WHERE tenant_id = %s AND kind = 'retrieval' AND run_id = ANY(%s)
"""


def _run_rows_pg(tenant_id: int, plan: dict, on_chunk=None):
    sql = _PG_CHUNK_SQL.format(agents="AND r.agent_name = ANY(%s)" if plan["agents"] else "")
    since, until = parse_datetime(plan["since"]), parse_datetime(plan["until"])
    last = 0
    loads, make = json.loads, ReportRow._make
    while True:
        params = [tenant_id, since, until, last] + ([plan["agents"]] if plan["agents"] else []) + [RUN_CHUNK]
        # Raw SQL is not routed: it reads where the ORM's queries of this replay read (core.routing).
        db = connections[read_alias()]
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            chunk = cursor.fetchall()
        if not chunk:
            return
        last = chunk[-1][0]
        ids = [c[0] for c in chunk]
        texts = source_texts(ids)
        # Spans are read only for the runs that have retrieval spans (most have none): one query
        # with the ids as one array, cheaper than an EXISTS per run or the ORM's IN list.
        with db.cursor() as cursor:
            cursor.execute(_PG_RETRIEVING_SQL, [tenant_id, ids])
            retrieving = [row[0] for row in cursor.fetchall()]
        extra = _run_extras(tenant_id, ids, plan, retrieving=retrieving)
        for run_id, agent, completed, output, reports in chunk:
            rows = [make(with_sources(run_id, r, texts)) for r in loads(reports)] if reports else ()
            yield RunRow(run_id, agent, rows, completed, output, *extra(run_id))
        if on_chunk is not None:
            on_chunk()


def source_texts(run_ids) -> dict[tuple, str]:
    """The texts of these runs' sources (stored once per run, RunSource), for their reports' references."""
    rows = RunSource._base_manager.filter(run_id__in=run_ids).values_list("run_id", "source_id", "content_hash", "text")
    return {(run_id, source_id, digest): text for run_id, source_id, digest, text in rows}


def with_sources(run_id: int, fields, texts: dict) -> list:
    """A report's fields with its source references (the last field) turned back into sources."""
    *head, refs = fields
    return [*head, [source_from_ref(ref, texts.get((run_id, ref["id"], ref[SOURCE_HASH]), "")) for ref in refs or ()]]


def run_rows(tenant_id: int, plan: dict, on_chunk=None):
    """Runs with their reports, in chunks of RUN_CHUNK runs: two queries a chunk, flat memory."""
    if connection.vendor == "postgresql":
        yield from _run_rows_pg(tenant_id, plan, on_chunk)
        return
    last = 0
    base = _runs(tenant_id, plan).order_by("id")
    while True:
        chunk = list(
            base.filter(id__gt=last).values_list("id", "agent_name", "ended_at", "error", "output")[:RUN_CHUNK]
        )
        if not chunk:
            return
        last = chunk[-1][0]
        reports: dict[int, list] = {}
        ids = [c[0] for c in chunk]
        rows = (
            GroundingReport.objects.filter(tenant_id=tenant_id, run_id__in=ids)
            .order_by("run_id", "seq")
            .values_list("run_id", *REPORT_FIELDS)
        )
        texts = source_texts(ids)
        for run_id, *fields in rows:
            reports.setdefault(run_id, []).append(ReportRow(*with_sources(run_id, fields, texts)))
        extra = _run_extras(tenant_id, ids, plan)
        for run_id, agent, ended_at, error, output in chunk:
            yield RunRow(
                run_id, agent, reports.get(run_id, ()), ended_at is not None and not error, output, *extra(run_id)
            )
        if on_chunk is not None:
            on_chunk()


def plan_needs_judges(plan: dict) -> bool:
    return any(
        judged.kinds_for(spec["rules"], phase)
        for spec in (*plan["before"], *plan["after"])
        for phase in ("mid_execution", "after_workflow")
    )


def retrieved_by_run(tenant_id: int, run_ids) -> dict[int, tuple[list[dict], list[int]]]:
    """{run id: (its retrieval results, how many were recorded before each of its reports)}, for
    the runs that have any: what the live path's citation checks saw (governance/services.py)."""
    found = retrieved_sources_of_runs(tenant_id=tenant_id, run_ids=run_ids)
    if not found:
        return {}
    reported: dict[int, list] = {}
    for run_id, created_at in (
        GroundingReport.objects.filter(tenant_id=tenant_id, run_id__in=list(found))
        .order_by("run_id", "seq")
        .values_list("run_id", "created_at")
    ):
        reported.setdefault(run_id, []).append(created_at)
    out = {}
    for run_id, results in found.items():
        sources = [source for _, source in results]
        before = [sum(1 for at, _ in results if at <= reported_at) for reported_at in reported.get(run_id, ())]
        out[run_id] = (sources, before)
    return out


def judged_by_run(tenant_id: int, run_ids) -> dict[int, dict]:
    """{run id: {(phase, report index or None): Judged}}: the judges' stored outputs per decision."""
    found: dict[int, dict] = {}
    rows = Evaluation.objects.filter(
        tenant_id=tenant_id, run_id__in=run_ids, source__in=(judged.LLM, judged.VERIFIER)
    ).values_list("run_id", "phase", "decision__report__seq", "policy_ref", "source", "metadata")
    parts: dict[tuple, dict] = {}
    for run_id, phase, seq, policy_ref, source, metadata in rows.order_by("id"):
        metadata = metadata if isinstance(metadata, dict) else {}
        part = parts.setdefault((run_id, phase, None if seq is None else seq - 1), {"llm": []})
        if source == judged.LLM:
            score = metadata.get("score")
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                model = (metadata.get("judge") or {}).get("model")
                part["llm"].append((policy_ref, model, metadata.get("criteria"), score))
        elif metadata.get("check") == judged.CONSISTENCY_CHECK:
            part.setdefault("consistency", metadata)
        else:
            part.setdefault("verifier", metadata)
    for (run_id, phase, index), part in parts.items():
        found.setdefault(run_id, {})[(phase, index)] = Judged(
            tuple(part["llm"]), part.get("verifier"), part.get("consistency")
        )
    return found


def _run_extras(tenant_id: int, run_ids, plan: dict, retrieving=None):
    """A function giving, for a run of the chunk, RunRow's retrieved, retrieved_before and judged.
    ``retrieving``: the runs known to have retrieval spans (None: look for them among all)."""
    retrieved = retrieved_by_run(tenant_id, run_ids if retrieving is None else retrieving) if retrieving != [] else {}
    stored = judged_by_run(tenant_id, run_ids) if plan_needs_judges(plan) else {}

    def extra(run_id):
        sources, before = retrieved.get(run_id, ((), None))
        return sources, before, stored.get(run_id, {})

    return extra


def replay_run(*, tenant_id: int, plan: dict, on_progress=None) -> dict:
    """Replay the plan over the stored runs; the issue's answer without elapsed_ms."""
    before = [PolicySpec.from_dict(s) for s in plan["before"]]
    after = [PolicySpec.from_dict(s) for s in plan["after"]]
    progress = {"reports": 0}

    def rows():
        for row in run_rows(tenant_id, plan, on_chunk=lambda: on_progress and on_progress(progress["reports"])):
            progress["reports"] += len(row.reports)
            yield row

    return replay(rows(), before=before, after=after).to_dict()


def replay_job_create(*, tenant: Tenant, plan: dict, total: int) -> ReplayJob:
    # The caller queues governance.tasks.replay_job on commit: tasks import this module, not the reverse.
    return ReplayJob.objects.create(tenant=tenant, params=plan, total=total)


def replay_job_execute(*, job_id: int) -> str:
    """Run a queued job (the Celery task's body), saving progress after each chunk of runs."""
    job = ReplayJob.objects.with_scopes_disabled().filter(pk=job_id).first()
    if job is None or job.status in (ReplayJob.Status.DONE, ReplayJob.Status.FAILED):
        return "missing" if job is None else job.status
    ReplayJob.objects.with_scopes_disabled().filter(pk=job.pk).update(status=ReplayJob.Status.RUNNING)
    started = timezone.now()

    def progress(done: int) -> None:
        # Named, so the router is not asked: a routed write would pin the job's remaining reads to the primary.
        ReplayJob.objects.with_scopes_disabled().using(DEFAULT_DB_ALIAS).filter(pk=job.pk).update(done=done)

    try:
        with scope(tenant=job.tenant_id), replica_reads():  # stored runs, read where heavy reads go
            result = replay_run(tenant_id=job.tenant_id, plan=job.params, on_progress=progress)
    except Exception as exc:  # recorded for the status URL, then re-raised for the worker's log
        with transaction.atomic():
            ReplayJob.objects.with_scopes_disabled().filter(pk=job.pk).update(
                status=ReplayJob.Status.FAILED, error=str(exc)[:2000], finished_at=timezone.now()
            )
        raise
    result["elapsed_ms"] = int((timezone.now() - started).total_seconds() * 1000)
    ReplayJob.objects.with_scopes_disabled().filter(pk=job.pk).update(
        status=ReplayJob.Status.DONE, done=result["reports"], result=result, finished_at=timezone.now()
    )
    return "done"
