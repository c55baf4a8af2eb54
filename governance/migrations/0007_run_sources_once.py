"""Run state that does not grow: sources stored once per run, the run's accumulated lists dropped.

Before, every report appended its citations, unsupported claims and sources to JSON lists on the
run (and set its output_confidence), and each report also kept its own full sources. Now:

- a report's sources are references (`source_refs`: the source as reported, its text replaced
  by the text's SHA-256), and the texts are RunSource rows, one per (run, source id, hash);
- what after_workflow audits is read from the reports when the run completes
  (governance/accumulated.py), so Run.citations, unsupported_claims, sources and
  output_confidence go.

The data step moves every report's sources into RunSource rows and references, and checks, run
by run, that what the run carried is exactly what its reports add up to (the concatenation of
their citations, claims and sources, and the latest confidence they reported): the dropped
columns are derivable, so nothing is lost. A run whose columns are not derivable (edited by hand,
say) stops the migration, with the run ids, rather than losing data. Reversible: going back
rebuilds the run columns and the reports' full sources from the new form.
"""

import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

SOURCE_HASH = "sha256"  # as governance.models.SOURCE_HASH; a migration keeps its own copy
CHUNK = 500


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _derived(reports) -> tuple[list, list, float | None, list]:
    citations, claims, confidence, sources = [], [], None, []
    for report in reports:
        citations += report.citations or []
        claims += report.unsupported_claims or []
        if report.output_confidence is not None:
            confidence = report.output_confidence
        sources += report.sources or []
    return citations, claims, confidence, sources


def sources_to_rows(apps, schema_editor):
    Run = apps.get_model("governance", "Run")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    RunSource = apps.get_model("governance", "RunSource")
    not_derivable = []
    run_ids = list(Run._base_manager.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(run_ids), CHUNK):
        runs = Run._base_manager.filter(pk__in=run_ids[start : start + CHUNK]).only(
            "pk", "tenant_id", "citations", "unsupported_claims", "output_confidence", "sources"
        )
        for run in runs:
            reports = list(GroundingReport._base_manager.filter(run_id=run.pk).order_by("seq"))
            derived = _derived(reports)
            if derived != (run.citations or [], run.unsupported_claims or [], run.output_confidence, run.sources or []):
                not_derivable.append(run.pk)
                continue
            texts: dict[tuple[str, str], str] = {}
            for report in reports:
                refs = []
                for source in report.sources or []:
                    source = source if isinstance(source, dict) else {"id": str(source)}
                    ident, text = str(source.get("id", "")), source.get("text") or ""
                    digest = _hash(text)
                    texts.setdefault((ident, digest), text)
                    refs.append(
                        {
                            "id": ident,
                            SOURCE_HASH: digest,
                            **{k: v for k, v in source.items() if k not in ("id", "text")},
                        }
                    )
                report.source_refs = refs
            GroundingReport._base_manager.bulk_update(reports, ["source_refs"], batch_size=CHUNK)
            RunSource._base_manager.bulk_create(
                [
                    RunSource(tenant_id=run.tenant_id, run_id=run.pk, source_id=ident, content_hash=digest, text=text)
                    for (ident, digest), text in texts.items()
                ],
                batch_size=CHUNK,
                ignore_conflicts=True,
            )
    if not_derivable:
        shown = ", ".join(str(pk) for pk in not_derivable[:20])
        raise RuntimeError(
            f"{len(not_derivable)} run(s) carry grounding data their reports do not add up to "
            f"(runs {shown}{' ...' if len(not_derivable) > 20 else ''}); dropping Run.citations, "
            "unsupported_claims, sources and output_confidence would lose it. Nothing was changed."
        )


def rows_to_sources(apps, schema_editor):
    Run = apps.get_model("governance", "Run")
    GroundingReport = apps.get_model("governance", "GroundingReport")
    RunSource = apps.get_model("governance", "RunSource")
    for run in Run._base_manager.order_by("pk").only("pk").iterator(chunk_size=CHUNK):
        texts = {(s.source_id, s.content_hash): s.text for s in RunSource._base_manager.filter(run_id=run.pk)}
        reports = list(GroundingReport._base_manager.filter(run_id=run.pk).order_by("seq"))
        for report in reports:
            report.sources = [
                {
                    "id": ref["id"],
                    "text": texts.get((ref["id"], ref[SOURCE_HASH]), ""),
                    **{k: v for k, v in ref.items() if k not in ("id", SOURCE_HASH)},
                }
                for ref in report.source_refs or []
            ]
        GroundingReport._base_manager.bulk_update(reports, ["sources"], batch_size=CHUNK)
        citations, claims, confidence, sources = _derived(reports)
        Run._base_manager.filter(pk=run.pk).update(
            citations=citations, unsupported_claims=claims, output_confidence=confidence, sources=sources
        )


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0006_replayjob"),
        ("tenants", "0002_auditevent"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunSource",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source_id", models.CharField(max_length=500)),
                ("content_hash", models.CharField(max_length=64)),
                ("text", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="source_rows", to="governance.run"
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.tenant"
                    ),
                ),
            ],
            options={
                "ordering": ["run", "id"],
                "constraints": [
                    models.UniqueConstraint(fields=("run", "source_id", "content_hash"), name="uniq_run_source")
                ],
            },
        ),
        migrations.AddField(
            model_name="groundingreport",
            name="source_refs",
            field=models.JSONField(default=list),
        ),
        migrations.RunPython(sources_to_rows, rows_to_sources),
        migrations.RemoveField(model_name="groundingreport", name="sources"),
        migrations.RemoveField(model_name="run", name="citations"),
        migrations.RemoveField(model_name="run", name="output_confidence"),
        migrations.RemoveField(model_name="run", name="sources"),
        migrations.RemoveField(model_name="run", name="unsupported_claims"),
    ]
