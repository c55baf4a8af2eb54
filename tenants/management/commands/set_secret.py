import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tenants import services
from tenants.audit import Actor
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Set a tenant secret; the value is read from standard input so it stays out of shell history."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("name")

    def handle(self, slug, name, **options):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant '{slug}'.")
        value = sys.stdin.read().rstrip("\r\n")
        try:
            secret = services.secret_set(
                tenant=tenant, name=name, value=value, actor=Actor.system("command:set_secret")
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {', '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(f"Set {secret.name} for {tenant.slug} ({secret.hint}).")
