from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from tenants import authenticator
from tenants.audit import Actor


class Command(BaseCommand):
    help = (
        "Remove every second factor of an account (authenticator app, recovery codes, security keys), "
        "for a person who lost them all; audited in each of their workspaces (docs/two-factor.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No account named {username!r}.")
        removed = authenticator.two_factor_reset(member=user, actor=Actor.system("manage.py reset_two_factor"))
        self.stdout.write(
            f"Reset the second factors of {username}: {removed['totp']} authenticator app, "
            f"{removed['recovery_codes']} recovery codes, {removed['webauthn']} security keys removed."
        )
