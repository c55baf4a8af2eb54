"""Migration 0007 moves runs' accumulated grounding data into the new form, and back.

Rows are written at 0006 with the historical models (a run carrying citation/claim/source lists,
its reports carrying full sources), the migration is applied, and what the reports and RunSource
rows hold afterwards is checked; then it is reversed.
"""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

# Tenants at its latest too, so the historical Tenant has every column the table has.
BEFORE = [("governance", "0006_replayjob"), ("tenants", "0007_tenant_score_audit_rate")]
AFTER = [("governance", "0007_run_sources_once"), ("tenants", "0007_tenant_score_audit_rate")]

REPORTS = [
    {
        "citations": ["fed"],
        "unsupported_claims": ["x"],
        "output_confidence": 0.4,
        "sources": [{"id": "fed", "text": "Rates rose.", "score": 0.9}, {"id": "imf", "text": "Growth."}],
    },
    {
        "citations": [{"source_id": "fed", "quote": "rates"}],
        "unsupported_claims": [],
        "output_confidence": None,
        "sources": [{"id": "fed", "text": "Rates rose.", "score": 0.2}, {"id": "chunk", "text": "", "span_id": 7}],
    },
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _old_run(apps, *, derivable: bool = True) -> int:
    Tenant = apps.get_model("tenants", "Tenant")
    Run = apps.get_model("governance", "Run")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    tenant, _ = Tenant.objects.get_or_create(slug="old", defaults={"name": "Old"})
    run = Run.objects.create(
        tenant=tenant,
        agent_name="research-agent",
        report_count=len(REPORTS),
        citations=[c for r in REPORTS for c in r["citations"]] + ([] if derivable else ["edited by hand"]),
        unsupported_claims=[c for r in REPORTS for c in r["unsupported_claims"]],
        output_confidence=0.4,
        sources=[s for r in REPORTS for s in r["sources"]],
    )
    for seq, report in enumerate(REPORTS, start=1):
        GroundingReport.objects.create(tenant=tenant, run=run, seq=seq, **report)
    return run.pk


@pytest.fixture
def at_0004():
    apps = _migrate(BEFORE)
    yield apps
    _migrate(executor_leaf())


def executor_leaf():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def test_forward_moves_sources_into_run_sources_and_references(at_0004):
    run_id = _old_run(at_0004)

    apps = _migrate(AFTER)

    RunSource = apps.get_model("governance", "RunSource")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    assert list(RunSource.objects.filter(run_id=run_id).order_by("source_id").values_list("source_id", "text")) == [
        ("chunk", ""),
        ("fed", "Rates rose."),
        ("imf", "Growth."),
    ]
    refs = [r.source_refs for r in GroundingReport.objects.filter(run_id=run_id).order_by("seq")]
    assert [[{k: v for k, v in ref.items() if k != "sha256"} for ref in report] for report in refs] == [
        [{"id": "fed", "score": 0.9}, {"id": "imf"}],
        [{"id": "fed", "score": 0.2}, {"id": "chunk", "span_id": 7}],
    ]
    assert refs[0][0]["sha256"] == refs[1][0]["sha256"]  # the same text: one RunSource row
    Run = apps.get_model("governance", "Run")
    assert not {"citations", "unsupported_claims", "sources", "output_confidence"} & {
        f.name for f in Run._meta.get_fields()
    }


def test_backward_rebuilds_the_run_columns_and_full_sources(at_0004):
    run_id = _old_run(at_0004)
    _migrate(AFTER)

    apps = _migrate(BEFORE)

    Run = apps.get_model("governance", "Run")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    run = Run.objects.get(pk=run_id)
    assert run.citations == ["fed", {"source_id": "fed", "quote": "rates"}]
    assert (run.unsupported_claims, run.output_confidence) == (["x"], 0.4)
    assert run.sources == [s for r in REPORTS for s in r["sources"]]
    assert [r.sources for r in GroundingReport.objects.filter(run_id=run_id).order_by("seq")] == [
        r["sources"] for r in REPORTS
    ]


def test_a_run_whose_columns_its_reports_do_not_add_up_to_stops_the_migration(at_0004):
    run_id = _old_run(at_0004, derivable=False)

    with pytest.raises(RuntimeError, match=f"runs {run_id}"):
        _migrate(AFTER)

    Run = _migrate(BEFORE).get_model("governance", "Run")
    assert "edited by hand" in Run.objects.get(pk=run_id).citations  # nothing was dropped
    Run.objects.filter(pk=run_id).delete()  # so that the teardown can migrate forward again
