"""One retention pass now (the daily Celery beat task runs the same): governance/retention.py."""

from django.core.management.base import BaseCommand, CommandError

from core.deletion import BATCH
from governance.retention import retention_apply
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Remove run data and audit rows older than each tenant's retention, in bounded batches, "
        "and audit what went. Tenants without a retention keep everything."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Count what would go; change nothing.")
        parser.add_argument("--tenant", metavar="SLUG", help="Only this tenant (never drops whole partitions).")
        parser.add_argument("--batch-size", type=int, default=BATCH, help=f"Rows per statement (default {BATCH}).")

    def handle(self, *, dry_run, tenant, batch_size, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        only = None
        if tenant:
            only = Tenant.objects.filter(slug=tenant).first()
            if only is None:
                raise CommandError(f"No tenant '{tenant}'.")
        results = retention_apply(tenant=only, dry_run=dry_run, batch=batch_size)
        verb = "would remove" if dry_run else "removed"
        if not results:
            self.stdout.write("No tenant has a retention set: nothing to do.")
        for result in results:
            summary = result.summary
            removed = ", ".join(f"{n} {label}" for label, n in summary["removed"].items()) or "no run data"
            self.stdout.write(
                f"{result.tenant.slug}: {verb} {removed}; {summary['audit_rows_removed']} audit rows"
                f" (runs before {summary['runs_before'] or 'never'}, audit before {summary['audit_before'] or 'never'})"
            )
