from django.core.management.base import BaseCommand, CommandError
from django_scopes import scope

from tenants.audit import audit_chain_verify, audit_checkpoint_latest
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Recompute a tenant's audit hash chain. Exit 0 when intact, 1 naming the first broken row."

    def add_arguments(self, parser):
        parser.add_argument("slug")

    def handle(self, slug, **options):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant '{slug}'.")
        with scope(tenant=tenant):
            verdict = audit_chain_verify(tenant=tenant)
            checkpoint = audit_checkpoint_latest(tenant=tenant)
        if checkpoint is not None:
            self.stdout.write(
                f"Starting at the retention checkpoint after row {checkpoint.seq} "
                f"({checkpoint.seq} older rows removed, hash {checkpoint.hash[:12]}…)."
            )
        if verdict.ok:
            self.stdout.write(f"Audit log of '{slug}' intact: {verdict.checked} rows checked.")
            return
        # CommandError exits with status 1.
        raise CommandError(
            f"Audit log of '{slug}' broken at row {verdict.first_broken} "
            f"({verdict.problem}); {verdict.checked} rows checked."
        )
