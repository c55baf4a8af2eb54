from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tenants import invitations
from tenants.audit import Actor
from tenants.models import Role, Tenant


class Command(BaseCommand):
    help = "Invite EMAIL to the tenant SLUG with a role: emails the link and prints it once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("email")
        parser.add_argument(
            "--role",
            default=Role.VIEWER.value,
            help="admin, reviewer or viewer (default): what the person may do once they accept.",
        )
        parser.add_argument(
            "--url",
            default="",
            help="The server's public address for the link, e.g. https://groundrule.example.com (default: PUBLIC_URL).",
        )

    def handle(self, slug, email, role, url, **options):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant '{slug}'.")
        base = (url or settings.PUBLIC_URL).strip().rstrip("/")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CommandError(
                "Set PUBLIC_URL to the address people open (e.g. https://groundrule.example.com), or pass --url: "
                "a command has no request to take the host from."
            )
        try:
            invitation, token = invitations.invitation_create(
                tenant=tenant, email=email, role=role, actor=Actor.system("command:invite")
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        link = invitations.invitation_url(token, base=base)
        problem = invitations.invitation_send(invitation=invitation, link=link, inviter=f"An admin of {tenant.name}")
        expires = invitation.expires_at.strftime("%Y-%m-%d %H:%M UTC")
        self.stdout.write(
            f"Invited {invitation.email} to {tenant.slug} as {invitation.role}; the link works once, until {expires}."
        )
        if problem:
            self.stderr.write(f"The email could not be sent ({problem}): pass the link on yourself.")
        else:
            self.stdout.write(f"Emailed to {invitation.email}. The link, shown only this once:")
        self.stdout.write(link)
