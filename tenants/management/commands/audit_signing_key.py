from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core import signing_keys


class Command(BaseCommand):
    help = (
        "Audit checkpoint keys (docs/security.md). `generate [--id ID]` prints a new AUDIT_SIGNING_KEYS entry "
        "alone on its last line; `public` prints the AUDIT_VERIFY_KEYS entries of the keys configured now."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["generate", "public"])
        parser.add_argument("--id", default="", help="The new key's id (default: audit-<YYYYMMDD>).")

    def handle(self, action, **options):
        if action == "public":
            for key_id, key in settings.AUDIT_KEYS.public.items():
                self.stdout.write(f"{key_id}:{signing_keys.public_b64(key)}")
            return
        key_id = options["id"] or f"audit-{timezone.now():%Y%m%d}"
        try:
            private_entry, public_entry = signing_keys.generate(key_id)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Public key (for AUDIT_VERIFY_KEYS once this key is retired): {public_entry}\n"
            "Put the line below first in AUDIT_SIGNING_KEYS; keep it out of the database and its backups."
        )
        self.stdout.write(private_entry)
