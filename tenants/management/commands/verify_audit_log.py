import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django_scopes import scope

from tenants.audit import audit_chain_verify, audit_checkpoint_latest
from tenants.models import Tenant
from tenants.signed_checkpoints import checkpoints_check


def _read_checkpoints(path: str) -> list:
    """One checkpoint as a JSON object, or the published file: one per line (JSON Lines)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        whole = json.loads(text)
        return whole if isinstance(whole, list) else [whole]
    except ValueError:
        pass
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except ValueError:
                raise CommandError(f"{path}, line {number}: not JSON.") from None
    if not items:
        raise CommandError(f"{path} holds no checkpoint.")
    return items


class Command(BaseCommand):
    help = (
        "Recompute a tenant's audit hash chain. Exit 0 when intact, 1 naming the first broken row. With "
        "--checkpoint, the chain must also lead to every signed checkpoint in FILE."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument(
            "--checkpoint",
            metavar="FILE",
            help="A signed checkpoint (JSON) or a published checkpoint file (JSON Lines) held outside the database.",
        )

    def handle(self, slug, **options):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant '{slug}'.")
        items = _read_checkpoints(options["checkpoint"]) if options["checkpoint"] else []
        with scope(tenant=tenant):
            try:
                expect = checkpoints_check(items, tenant=tenant) if items else None
                verdict = audit_chain_verify(tenant=tenant, expect=expect)
            except ValidationError as exc:
                problems = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
                raise CommandError(f"Checkpoint refused: {problems}") from None
            checkpoint = audit_checkpoint_latest(tenant=tenant)
        if checkpoint is not None:
            self.stdout.write(
                f"Starting at the retention checkpoint after row {checkpoint.seq} "
                f"({checkpoint.seq} older rows removed, hash {checkpoint.hash[:12]}…)."
            )
        if verdict.ok:
            against = f" and it leads to the {len(expect)} signed checkpoint(s) given" if expect else ""
            self.stdout.write(f"Audit log of '{slug}' intact: {verdict.checked} rows checked{against}.")
            return
        # CommandError exits with status 1.
        raise CommandError(
            f"Audit log of '{slug}' broken at row {verdict.first_broken} "
            f"({verdict.problem}); {verdict.checked} rows checked."
        )
