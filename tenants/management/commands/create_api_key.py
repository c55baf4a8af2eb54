from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tenants import services
from tenants.audit import Actor
from tenants.models import GRANTABLE_SCOPES, KeyScope, Tenant


class Command(BaseCommand):
    help = "Create an API key for a tenant. The key is printed once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="cli")
        parser.add_argument(
            "--scope",
            choices=[str(s) for s in GRANTABLE_SCOPES],
            default=KeyScope.AGENT.value,
            help="agent (default): report runs; read: every read endpoint; admin: everything.",
        )
        parser.add_argument(
            "--agents",
            default="",
            help="Agent keys only: comma-separated agent names or patterns (support-*) it may act for.",
        )
        parser.add_argument(
            "--expires", type=int, default=None, metavar="DAYS", help="The key stops working after this many days."
        )

    def handle(self, slug, name, scope, agents, expires, **options):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant '{slug}'.")
        patterns = [a.strip() for a in agents.split(",") if a.strip()]
        try:
            key, raw = services.api_key_create(
                tenant=tenant,
                name=name,
                scope=scope,
                agents=patterns,
                expires_in_days=expires,
                actor=Actor.system("command:create_api_key"),
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {', '.join(v)}" for k, v in exc.message_dict.items())) from None
        pinned = f", agents {', '.join(key.agents)}" if key.agents else ""
        expiry = f", expires {key.expires_at:%Y-%m-%d %H:%M} UTC" if key.expires_at else ""
        self.stderr.write(
            f"Created {key.scope} API key '{key.name}' ({key.prefix}…{pinned}{expiry}) for {tenant.slug}. "
            "It will not be shown again:"
        )
        self.stdout.write(raw)
