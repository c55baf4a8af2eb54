"""`manage.py invite SLUG EMAIL --role …`: the same invitation as the Members page, from a shell."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client
from django_scopes import scopes_disabled

from tenants.models import AuditEvent, Invitation, Membership, Role, hash_token

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-new-passphrase"


def invite(*args) -> tuple[list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("invite", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def test_invite_emails_the_link_and_prints_it_once_alone_on_the_last_line(acme):
    lines, err = invite("acme", "erin@example.com", "--role", "reviewer", "--url", "https://gr.example.com/")
    link = lines[-1]
    assert link.startswith("https://gr.example.com/invitations/") and link.endswith("/")
    assert lines[0].startswith("Invited erin@example.com to acme as reviewer; the link works once, until ")
    assert lines[1] == "Emailed to erin@example.com. The link, shown only this once:"
    assert err == ""
    [message] = mail.outbox
    assert message.to == ["erin@example.com"] and link in message.body
    with scopes_disabled():
        invitation = Invitation.objects.get(tenant=acme)
        event = AuditEvent.objects.get(tenant=acme, action="tenants.invitation.created")
    assert invitation.role == Role.REVIEWER and invitation.created_by is None
    assert invitation.token_hash == hash_token(link.rstrip("/").rsplit("/", 1)[1])
    assert event.actor_label == "command:invite"


def test_the_link_from_the_shell_makes_a_member(acme, settings):
    settings.PUBLIC_URL = "http://testserver"
    lines, _ = invite("acme", "erin@example.com", "--role", "admin")
    path = lines[-1].removeprefix("http://testserver")
    response = Client().post(path, {"password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    erin = get_user_model().objects.get(username="erin@example.com")
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=erin).role == Role.ADMIN


def test_the_role_defaults_to_viewer(acme, settings):
    settings.PUBLIC_URL = "https://gr.example.com"
    invite("acme", "erin@example.com")
    assert Invitation.objects.with_scopes_disabled().get(tenant=acme).role == Role.VIEWER


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope", "erin@example.com"), "No tenant 'nope'."),
        (("acme", "not-an-email"), "email: Enter a valid email address."),
        (("acme", "erin@example.com", "--role", "owner"), "role: Choose one of: admin, reviewer, viewer."),
        (("acme", "BOB@example.com"), "email: bob@example.com is already a member of this workspace."),
        (("acme", "erin@example.com", "--url", "gr.example.com"), "Set PUBLIC_URL"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(acme, bob, settings, args, message):
    settings.PUBLIC_URL = "https://gr.example.com"
    before = AuditEvent.objects.with_scopes_disabled().count()
    with pytest.raises(CommandError) as refused:
        invite(*args)
    assert str(refused.value).startswith(message)
    assert not Invitation.objects.with_scopes_disabled().exists()
    assert AuditEvent.objects.with_scopes_disabled().count() == before and mail.outbox == []


def test_a_second_pending_invitation_is_refused(acme, settings):
    settings.PUBLIC_URL = "https://gr.example.com"
    invite("acme", "erin@example.com")
    with pytest.raises(CommandError, match="email: An invitation to erin@example.com is already pending"):
        invite("acme", "Erin@example.com", "--role", "admin")
    assert Invitation.objects.with_scopes_disabled().count() == 1


def test_without_public_url_the_command_says_what_to_set(acme, settings):
    settings.PUBLIC_URL = ""
    with pytest.raises(CommandError) as refused:
        invite("acme", "erin@example.com")
    assert str(refused.value) == (
        "Set PUBLIC_URL to the address people open (e.g. https://groundrule.example.com), or pass --url: "
        "a command has no request to take the host from."
    )
    assert not Invitation.objects.with_scopes_disabled().exists()


def test_a_workspace_name_with_a_line_break_still_gives_a_one_line_subject(db, settings):
    from tenants import services
    from tenants.audit import Actor

    services.tenant_create(slug="multi", name="Two\nLines", actor=Actor.system("tests"))
    settings.PUBLIC_URL = "https://gr.example.com"
    invite("multi", "erin@example.com")
    [message] = mail.outbox
    assert message.subject == "You are invited to Two Lines on Groundrule"
    assert "the workspace “Two Lines” on Groundrule" in message.body
