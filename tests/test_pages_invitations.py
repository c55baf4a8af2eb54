"""Invitations: an admin invites by email from Settings > Members; the link, emailed and shown once,
makes its holder a member with the role, once. Expired, revoked and used links are refused with a
page that says so, and nothing is half-made."""

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import DatabaseError
from django.test import Client
from django.utils import timezone
from django_scopes import scopes_disabled
from page_forms import field_errors
from server_process import free_port
from smtp_receiver import SmtpReceiver

from tenants import invitations
from tenants.models import AuditEvent, Invitation, Membership, Role, hash_token

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
NEW_PASSWORD = "a-long-new-passphrase"
LINK = re.compile(r'id="invitation-link" class="mono" type="text" readonly value="([^"]+)"')


def invite(client, email="erin@example.com", role="reviewer"):
    return client.post("/settings/members/invite/", {"email": email, "role": role})


def shown_link(response) -> str:
    match = LINK.search(response.text)
    assert match, "the page shows no invitation link"
    return match.group(1)


def path_of(link: str) -> str:
    return "/" + link.split("/", 3)[3]


def token_of(link: str) -> str:
    return link.rstrip("/").rsplit("/", 1)[1]


def audit(tenant) -> list[tuple[str, str]]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq").values_list("action", "actor_label"))


def state(tenant):
    """Everything a refused action must leave as it was."""
    with scopes_disabled():
        return (
            get_user_model().objects.count(),
            Membership.objects.filter(tenant=tenant).count(),
            list(Invitation.objects.filter(tenant=tenant).values_list("pk", "accepted_at", "revoked_at")),
            AuditEvent.objects.filter(tenant=tenant).count(),
            len(mail.outbox),
        )


@pytest.fixture
def admin(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def link(admin, acme):
    return shown_link(invite(admin))


# --- inviting -----------------------------------------------------------------------------------


def test_admin_invites_by_email_and_sees_the_link_once(admin, acme, alice):
    response = invite(admin)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    link = shown_link(response)
    assert re.fullmatch(r"http://testserver/invitations/[A-Za-z0-9_-]{43}/", link)
    assert "We emailed this link to erin@example.com." in response.text

    [message] = mail.outbox
    assert message.to == ["erin@example.com"]
    assert message.subject == "You are invited to Acme Research on Groundrule"
    assert link in message.body
    assert "alice invited you to the workspace “Acme Research” on Groundrule, as reviewer." in message.body

    with scopes_disabled():
        invitation = Invitation.objects.get(tenant=acme)
        events = list(AuditEvent.objects.filter(tenant=acme, action="tenants.invitation.created"))
    assert (invitation.email, invitation.role, invitation.created_by) == ("erin@example.com", "reviewer", alice)
    assert invitation.token_hash == hash_token(token_of(link))
    assert timedelta(hours=71, minutes=59) < invitation.expires_at - timezone.now() <= timedelta(hours=72)
    [event] = events
    assert event.actor_label == "alice"
    assert event.after == {"email": "erin@example.com", "role": "reviewer", "expires_at": event.after["expires_at"]}
    assert token_of(link) not in json.dumps([event.before, event.after, event.object_repr])

    # never again: the page lists the invitation, not its link
    page = admin.get("/settings/members/").text
    assert token_of(link) not in page and 'id="invitation-link"' not in page
    assert '<th scope="row">erin@example.com</th>' in page and "Pending invitations" in page


def test_links_are_built_on_public_url_when_it_is_set(admin, acme, settings):
    settings.PUBLIC_URL = "https://groundrule.example.com"
    link = shown_link(invite(admin))
    assert link.startswith("https://groundrule.example.com/invitations/")
    assert link in mail.outbox[0].body


def test_the_invitation_goes_through_smtp_when_settings_say_so(admin, acme, settings):
    with SmtpReceiver() as smtp:
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {
                    "host": "127.0.0.1",
                    "port": smtp.port,
                    "username": "mailer",
                    "password": "mail-password",
                    "use_tls": False,
                    "timeout": 5,
                },
            }
        }
        settings.DEFAULT_FROM_EMAIL = "Groundrule <noreply@example.com>"
        link = shown_link(invite(admin))
    [delivered] = smtp.delivered
    assert delivered.recipients == ["erin@example.com"] and delivered.sender == "noreply@example.com"
    assert delivered.login == "mailer"
    assert link in delivered.message.get_payload(decode=True).decode()


def test_a_mail_server_that_cannot_be_reached_still_leaves_the_link_to_copy(admin, acme, settings):
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": free_port(), "use_tls": False, "timeout": 2},
        }
    }
    response = invite(admin)
    assert response.status_code == 200
    assert "The email could not be sent" in response.text and "Copy the link and send it yourself." in response.text
    assert shown_link(response).startswith("http://testserver/invitations/")
    assert Invitation.objects.with_scopes_disabled().filter(tenant=acme, email="erin@example.com").exists()


@pytest.mark.parametrize(
    ("email", "role", "field", "message"),
    [
        ("not-an-email", "viewer", "email", "Enter a valid email address."),
        ("", "viewer", "email", "This field is required."),
        ("erin@example.com", "owner", "role", "Choose one of: admin, reviewer, viewer."),
        ("bob@example.com", "viewer", "email", "bob@example.com is already a member of this workspace."),
        ("BOB@Example.com", "admin", "email", "bob@example.com is already a member of this workspace."),
        (
            "Pending@Example.com",
            "viewer",
            "email",
            "An invitation to pending@example.com is already pending; revoke it to send a new one.",
        ),
    ],
)
def test_bad_invitations_are_refused_beside_the_field_and_change_nothing(admin, acme, bob, email, role, field, message):
    invite(admin, "pending@example.com", "viewer")
    before = state(acme)
    response = invite(admin, email, role)
    assert response.status_code == 400
    assert field_errors(response.text, field, auto_id="invite_%s") == [message]
    assert 'id="invitation-link"' not in response.text
    assert state(acme) == before


def test_an_existing_account_that_is_a_member_by_username_is_refused_too(admin, acme, django_user_model):
    # create_tenant --admin-email and accepted invitations make accounts whose username is the email
    from tenants import services
    from tenants.audit import Actor

    user = django_user_model.objects.create_user("frank@example.com", email="", password=NEW_PASSWORD)
    services.membership_set(tenant=acme, user=user, role=Role.VIEWER, actor=Actor.system("tests"))
    response = invite(admin, "frank@example.com")
    assert field_errors(response.text, "email", auto_id="invite_%s") == [
        "frank@example.com is already a member of this workspace."
    ]


def test_a_revoked_or_expired_invitation_can_be_sent_again(admin, acme):
    first = shown_link(invite(admin))
    invitation = Invitation.objects.with_scopes_disabled().get(tenant=acme)
    admin.post(f"/settings/members/invitations/{invitation.pk}/revoke/")
    second = shown_link(invite(admin))
    Invitation.objects.with_scopes_disabled().filter(token_hash=hash_token(token_of(second))).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    third = shown_link(invite(admin))
    assert len({first, second, third}) == 3 and len(mail.outbox) == 3


# --- revoking -----------------------------------------------------------------------------------


def test_admin_revokes_an_invitation_in_place_and_its_link_stops_working(admin, acme, link):
    invitation = Invitation.objects.with_scopes_disabled().get(tenant=acme)
    response = admin.post(f"/settings/members/invitations/{invitation.pk}/revoke/", **HTMX)
    assert response.status_code == 200 and response.text == ""
    assert json.loads(response["HX-Trigger"])["toast"]["message"] == (
        "Invitation for erin@example.com revoked. Its link no longer works."
    )
    assert audit(acme)[-1] == ("tenants.invitation.revoked", "alice")
    assert "erin@example.com" not in admin.get("/settings/members/").text

    before = state(acme)
    page = Client().get(path_of(link))
    assert page.status_code == 410 and "This invitation was withdrawn" in page.text
    refused = Client().post(path_of(link), {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert refused.status_code == 410 and "This invitation was withdrawn" in refused.text
    assert state(acme) == before


def test_revoking_works_without_javascript(admin, acme, link):
    invitation = Invitation.objects.with_scopes_disabled().get(tenant=acme)
    response = admin.post(f"/settings/members/invitations/{invitation.pk}/revoke/", follow=True)
    assert response.redirect_chain == [("/settings/members/", 302)]
    assert "Invitation for erin@example.com revoked. Its link no longer works." in response.text
    assert Invitation.objects.with_scopes_disabled().get(pk=invitation.pk).revoked_at is not None


def test_an_accepted_invitation_cannot_be_revoked(admin, acme, link):
    Client().post(path_of(link), {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    invitation = Invitation.objects.with_scopes_disabled().get(tenant=acme)
    before = state(acme)
    response = admin.post(f"/settings/members/invitations/{invitation.pk}/revoke/", **HTMX)
    assert response["HX-Reswap"] == "none"
    assert json.loads(response["HX-Trigger"])["toast"]["message"] == (
        "erin@example.com already accepted this invitation; remove the member instead."
    )
    assert state(acme) == before


def test_another_tenants_invitation_is_not_found(client, charlie, acme, globex, alice):
    inviter = Client()
    inviter.force_login(alice)
    invite(inviter)
    invitation = Invitation.objects.with_scopes_disabled().get(tenant=acme)
    client.force_login(charlie)
    assert "erin@example.com" not in client.get("/settings/members/").text
    assert client.post(f"/settings/members/invitations/{invitation.pk}/revoke/").status_code == 404
    assert client.post(f"/settings/members/invitations/{invitation.pk}/revoke/", **HTMX).status_code == 404
    assert client.post("/settings/members/invitations/99999999999999999999/revoke/").status_code == 404
    assert Invitation.objects.with_scopes_disabled().get(pk=invitation.pk).revoked_at is None


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_reviewers_and_viewers_can_neither_invite_nor_revoke_nor_see_invitations(client, request, acme, link, who):
    invitation = Invitation.objects.with_scopes_disabled().get(tenant=acme)
    client.force_login(request.getfixturevalue(who))
    page = client.get("/settings/members/").text
    assert "Invite by email" not in page and "erin@example.com" not in page
    before = state(acme)
    response = invite(client, "gina@example.com")
    assert response.status_code == 403 and "This needs the admin role in this tenant." in response.text
    assert client.post(f"/settings/members/invitations/{invitation.pk}/revoke/").status_code == 403
    assert state(acme) == before


# --- accepting ----------------------------------------------------------------------------------


def test_a_new_person_sets_a_password_and_joins_with_the_role(acme, link):
    visitor = Client()
    page = visitor.get(path_of(link))
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    assert "Join Acme Research" in page.text and "alice invited you to join as <strong>reviewer</strong>" in page.text
    assert 'value="erin@example.com" readonly' in page.text

    response = visitor.post(path_of(link), {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    overview = visitor.get("/")
    assert overview.status_code == 200
    assert "Welcome to Acme Research. You joined as reviewer." in overview.text
    assert 'title="Your role in Acme Research">reviewer</span>' in overview.text

    erin = get_user_model().objects.get(username="erin@example.com")
    assert erin.email == "erin@example.com" and erin.check_password(NEW_PASSWORD)
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=erin).role == Role.REVIEWER
        invitation = Invitation.objects.get(tenant=acme)
    assert invitation.accepted_by == erin and invitation.accepted_at is not None
    assert audit(acme)[-2:] == [
        ("tenants.membership.created", "erin@example.com"),
        ("tenants.invitation.accepted", "erin@example.com"),
    ]
    # and signs in again later with the email and the password chosen
    again = Client()
    signed_in = again.post("/accounts/login/", {"username": "erin@example.com", "password": NEW_PASSWORD})
    assert signed_in.status_code == 302


@pytest.mark.parametrize(
    ("password", "password2", "field", "messages"),
    [
        ("short", "short", "password", ["This password is too short. It must contain at least 8 characters."]),
        ("password123", "password123", "password", ["This password is too common."]),
        (NEW_PASSWORD, "something-else-entirely", "password2", ["The two passwords do not match."]),
        ("", "", "password", ["This field is required."]),
    ],
)
def test_a_password_the_validators_refuse_is_shown_beside_the_field_and_creates_no_account(
    acme, link, password, password2, field, messages
):
    before = state(acme)
    response = Client().post(path_of(link), {"password": password, "password2": password2})
    assert response.status_code == 400
    assert field_errors(response.text, field) == messages
    assert f'value="{password}"' not in response.text  # a password is never sent back
    assert state(acme) == before
    assert invitations.refusal(Invitation.objects.with_scopes_disabled().get(tenant=acme)) is None


def test_a_used_link_is_refused_and_makes_nothing_the_second_time(acme, link):
    Client().post(path_of(link), {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    before = state(acme)
    for visitor in (Client(), Client()):
        page = visitor.get(path_of(link))
        assert page.status_code == 410 and "This invitation has already been used" in page.text
        response = visitor.post(path_of(link), {"password": "another-passphrase", "password2": "another-passphrase"})
        assert response.status_code == 410 and "Each invitation link works once." in response.text
    assert state(acme) == before


def test_an_expired_link_is_refused_and_makes_nothing(acme, link):
    Invitation.objects.with_scopes_disabled().filter(tenant=acme).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    before = state(acme)
    page = Client().get(path_of(link))
    assert page.status_code == 410
    assert "This invitation has expired" in page.text and "Invitation links work for 72 hours." in page.text
    response = Client().post(path_of(link), {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 410 and "This invitation has expired" in response.text
    assert state(acme) == before
    assert not get_user_model().objects.filter(username="erin@example.com").exists()


@pytest.mark.parametrize("token", ["not-a-token", "x" * 43, "x" * 500])
def test_a_link_that_was_never_issued_is_a_clear_not_found_page(db, token):
    response = Client().get(f"/invitations/{token}/")
    assert response.status_code == 404 and "This invitation link is not valid" in response.text
    assert Client().post(f"/invitations/{token}/", {"password": NEW_PASSWORD}).status_code == 404


def test_no_account_is_left_when_joining_fails_half_way(acme, link, monkeypatch):
    def failing_membership(**kwargs):
        raise DatabaseError("the database went away")

    monkeypatch.setattr(invitations, "membership_set", failing_membership)
    before = state(acme)
    with pytest.raises(DatabaseError):
        invitations.invitation_accept_new_account(token=token_of(link), password=NEW_PASSWORD)
    assert state(acme) == before
    assert not get_user_model().objects.filter(username="erin@example.com").exists()


@pytest.fixture
def erin(db):
    return get_user_model().objects.create_user("erin", "Erin@Example.com", "erins-own-passphrase")


def test_someone_with_an_account_signs_in_and_joins(acme, link, erin):
    visitor = Client()
    page = visitor.get(path_of(link))
    assert page.status_code == 200 and "You already have an account with this email." in page.text
    assert 'name="password"' not in page.text
    sign_in_url = f"/accounts/login/?next={path_of(link)}"
    assert f'href="{sign_in_url}">Sign in to accept</a>' in page.text

    response = visitor.post(sign_in_url, {"username": "erin", "password": "erins-own-passphrase"})
    assert response.status_code == 302 and response["Location"] == path_of(link)
    page = visitor.get(path_of(link))
    assert '<button class="btn btn-primary btn-block" type="submit">Join Acme Research</button>' in page.text
    users_before = get_user_model().objects.count()
    joined = visitor.post(path_of(link), follow=True)
    assert joined.redirect_chain == [("/", 302)]
    assert "Welcome to Acme Research. You joined as reviewer." in joined.text
    assert get_user_model().objects.count() == users_before
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=erin).role == Role.REVIEWER
    assert audit(acme)[-1] == ("tenants.invitation.accepted", "erin")
    assert visitor.get(path_of(link)).status_code == 410


def test_a_new_account_cannot_be_made_over_an_existing_one(acme, link, erin):
    before = state(acme)
    response = Client().post(path_of(link), {"password": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 200 and "Sign in to accept" in response.text
    assert state(acme) == before
    assert erin.password == get_user_model().objects.get(pk=erin.pk).password


def test_someone_signed_in_as_another_account_is_refused(acme, link, charlie):
    visitor = Client()
    visitor.force_login(charlie)
    before = state(acme)
    page = visitor.get(path_of(link))
    assert page.status_code == 403 and "This invitation is for someone else" in page.text
    assert "It was sent to <strong>erin@example.com</strong>, and you are signed in as <strong>charlie</strong>" in (
        page.text
    )
    assert visitor.post(path_of(link)).status_code == 403
    assert state(acme) == before


def test_a_member_already_has_nothing_to_accept(acme, link, erin):
    from tenants import services
    from tenants.audit import Actor

    services.membership_set(tenant=acme, user=erin, role=Role.VIEWER, actor=Actor.system("tests"))
    visitor = Client()
    visitor.force_login(erin)
    before = state(acme)
    page = visitor.get(path_of(link))
    assert page.status_code == 200 and "You are already a member of Acme Research" in page.text
    assert visitor.post(path_of(link)).status_code == 200
    assert state(acme) == before


def test_a_member_of_another_workspace_joins_a_second_one_and_can_switch(admin, acme, globex, charlie):
    link = shown_link(invite(admin, "charlie@example.com", "viewer"))
    visitor = Client()
    visitor.force_login(charlie)
    response = visitor.post(path_of(link), follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert "Welcome to Acme Research. You joined as viewer." in response.text
    assert "selected>Acme Research · viewer</option>" in response.text and ">Globex · admin</option>" in response.text
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=charlie).role == Role.VIEWER
        assert not AuditEvent.objects.filter(tenant=globex, action__startswith="tenants.invitation").exists()


def test_the_members_page_reads_pending_invitations_in_one_query(admin, acme, django_assert_num_queries):
    invite(admin, "first@example.com")
    # session, user, memberships, members, who of them has two-factor, invitations
    with django_assert_num_queries(6):
        admin.get("/settings/members/")
    for i in range(10):
        invite(admin, f"person{i}@example.com")
    with django_assert_num_queries(6):
        page = admin.get("/settings/members/").text
    assert page.count('<th scope="row">person') == 10
