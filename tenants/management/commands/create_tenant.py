from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from tenants import services
from tenants.audit import Actor
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Create a tenant, optionally with an admin login."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--admin-email")
        parser.add_argument("--admin-password")

    def handle(self, slug, name, admin_email, admin_password, **options):
        if bool(admin_email) != bool(admin_password):
            raise CommandError("--admin-email and --admin-password go together.")
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"Tenant '{slug}' already exists.")
        actor = Actor.system("command:create_tenant")
        try:
            with transaction.atomic():
                tenant = services.tenant_create(slug=slug, name=name, actor=actor)
                if admin_email:
                    services.user_create_admin(tenant=tenant, email=admin_email, password=admin_password, actor=actor)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {', '.join(v)}" for k, v in exc.message_dict.items())) from None
        self.stdout.write(f"Created tenant {tenant.slug} ({tenant.name}).")
        if admin_email:
            self.stdout.write(f"Admin login: {admin_email}")
