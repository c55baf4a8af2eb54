from django.core.management.base import BaseCommand, CommandError

from tenants import services
from tenants.audit import Actor
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Create an API key for a tenant. The key is printed once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="cli")

    def handle(self, slug, name, **options):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant '{slug}'.")
        key, raw = services.api_key_create(tenant=tenant, name=name, actor=Actor.system("command:create_api_key"))
        self.stderr.write(
            f"Created API key '{key.name}' ({key.prefix}…) for {tenant.slug}. It will not be shown again:"
        )
        self.stdout.write(raw)
