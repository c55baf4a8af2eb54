"""Single sign-on with OpenID Connect, through the real flow against a provider on loopback
(tests/oidc_provider.py): the button, the provider's redirect back, the code exchanged with PKCE,
the ID token checked. Invited people become members with the invited role, allowed domains get an
account with no workspace, everyone else and every bad token is refused with a page that says why,
no account made, the refusal recorded."""

import html
import logging
import re
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django_scopes import scopes_disabled
from oidc_provider import CLIENT_ID, CLIENT_SECRET, DROP, OidcProvider, configure
from webhook_receiver import WebhookReceiver

from tenants import invitations, oidc
from tenants.audit import Actor
from tenants.models import AuditEvent, Invitation, Membership, Role

pytestmark = pytest.mark.django_db

User = get_user_model()
ADDR = "203.0.113.7"


@pytest.fixture(scope="module")
def provider_server():
    with OidcProvider() as provider:
        yield provider


@pytest.fixture
def provider(provider_server, settings):
    configure(settings, provider_server)
    yield provider_server
    oidc.forget_cached()


def start(client: Client, next_url: str = "") -> str:
    """Presses the button; answers the provider's authorization URL it redirects to."""
    response = client.get("/accounts/oidc/login/" + (f"?next={next_url}" if next_url else ""), REMOTE_ADDR=ADDR)
    assert response.status_code == 302
    return response["Location"]


def provider_redirect(authorize_url: str) -> str:
    """The person signs in at the provider, which redirects back: answers our callback's path and query."""
    answer = httpx.get(authorize_url, follow_redirects=False)
    assert answer.status_code == 302
    back = urlsplit(answer.headers["location"])
    return f"{back.path}?{back.query}"


def sign_in(client: Client, next_url: str = ""):
    return client.get(provider_redirect(start(client, next_url)), REMOTE_ADDR=ADDR)


def refused_reason(response) -> str:
    match = re.search(r'data-testid="sso-refused" data-reason="([a-z_]+)"', response.text)
    assert match, response.text[:500]
    return match.group(1)


def shown(response) -> str:
    """The page's text as a person reads it."""
    return html.unescape(re.sub(r"<[^>]+>", "", response.text))


def audit_actions(tenant) -> list[tuple[str, dict]]:
    with scopes_disabled():
        return list(AuditEvent.objects.filter(tenant=tenant).order_by("seq").values_list("action", "after"))


def invite(tenant, email="erin@example.com", role=Role.REVIEWER, by=None):
    return invitations.invitation_create(tenant=tenant, email=email, role=role, actor=Actor(user=by))[0]


# --- the sign-in page ---------------------------------------------------------------------------


def test_sign_in_page_offers_the_provider_by_name_and_keeps_next(provider):
    page = Client().get("/accounts/login/?next=/runs/")
    assert page.status_code == 200
    assert 'href="/accounts/oidc/login/?next=%2Fruns%2F"' in page.text
    assert "Sign in with Example ID" in page.text
    assert 'name="password"' in page.text  # passwords still work alongside


def test_sign_in_page_without_sso_configured_has_no_button(settings, db):
    settings.OIDC_ISSUER = ""
    page = Client().get("/accounts/login/")
    assert "Sign in with" not in page.text
    assert Client().get("/accounts/oidc/login/").status_code == 404


def test_the_authorization_request_uses_pkce_state_and_nonce(provider):
    query = parse_qs(urlsplit(start(Client())).query)
    assert query["response_type"] == ["code"]
    assert query["client_id"] == [CLIENT_ID]
    assert query["redirect_uri"] == ["http://testserver/accounts/oidc/callback/"]
    assert query["scope"] == ["openid email profile"]
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["state"][0]) >= 40 and len(query["nonce"][0]) >= 40 and query["code_challenge"][0]


# --- who gets in ---------------------------------------------------------------------------------


def test_invited_email_becomes_a_member_with_the_invited_role(provider, acme, alice):
    invite(acme, "Erin@Example.com", Role.REVIEWER, by=alice)
    client = Client()
    response = sign_in(client, "/runs/")
    assert response.status_code == 302 and response["Location"] == "/runs/"
    erin = User.objects.get(username="erin@example.com")
    assert not erin.has_usable_password()
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=erin).role == Role.REVIEWER
        assert Invitation.objects.get(tenant=acme, email="erin@example.com").accepted_by == erin
    assert client.get("/runs/").status_code == 200  # signed in, in the workspace
    actions = [a for a, _ in audit_actions(acme)]
    assert actions[-3:] == ["tenants.membership.created", "tenants.invitation.accepted", "accounts.sso.signed_in"]
    assert audit_actions(acme)[-1][1]["account_created"] is True
    # The provider was asked with the client's own credentials and the PKCE verifier.
    form = provider.token_requests[-1]["form"]
    assert form["grant_type"] == "authorization_code" and form["code_verifier"]
    assert "client_secret" not in form


def test_existing_account_is_matched_by_verified_email_case_insensitively(provider, acme, alice):
    provider.claims = {"email": "ALICE@example.com"}
    client = Client()
    response = sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/"
    assert User.objects.count() == 1
    assert client.get("/").status_code == 200
    assert audit_actions(acme)[-1] == (
        "accounts.sso.signed_in",
        {"email": "alice@example.com", "issuer": provider.issuer, "subject": "person-1", "account_created": False},
    )


def test_a_pending_invitation_for_an_existing_account_is_accepted_on_sso_sign_in(provider, acme, globex, charlie):
    invite(acme, "charlie@example.com", Role.VIEWER)
    provider.claims = {"email": "charlie@example.com"}
    assert sign_in(Client()).status_code == 302
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=charlie).role == Role.VIEWER


def test_allowed_domain_gets_an_account_with_no_workspace_and_the_welcome_page(provider, acme):
    provider.claims = {"email": "pat@partner.example"}
    client = Client()
    response = sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/welcome/"
    pat = User.objects.get(username="pat@partner.example")
    with scopes_disabled():
        assert not Membership.objects.filter(user=pat).exists()
    welcome = client.get("/welcome/")
    assert "You are not in a workspace yet" in welcome.text


def test_unknown_email_is_refused_with_a_page_that_says_what_to_do(provider, acme, caplog):
    provider.claims = {"email": "mallory@elsewhere.example"}
    with caplog.at_level(logging.WARNING, logger="tenants.sso"):
        response = sign_in(Client())
    assert response.status_code == 403
    assert refused_reason(response) == "unknown_person"
    assert (
        "No account or invitation for mallory@elsewhere.example. Ask an admin of your workspace to invite you."
        in shown(response)
    )
    assert User.objects.count() == 0
    # No workspace knows this person: the refusal goes to the operator's log.
    assert "SSO sign-in refused (unknown_person) for mallory@elsewhere.example" in caplog.text


def test_two_accounts_with_the_same_email_are_refused(provider, acme, alice):
    User.objects.create_user(username="alice2", email="ALICE@example.com", password="x-long-password-1")
    provider.claims = {"email": "alice@example.com"}
    response = sign_in(Client())
    assert response.status_code == 403 and refused_reason(response) == "ambiguous_email"
    assert audit_actions(acme)[-1][0] == "accounts.sso.refused"


def test_a_person_paused_by_the_password_throttle_still_signs_in_through_sso(provider, acme, alice, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    for _ in range(2):
        Client().post("/accounts/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR=ADDR)
    paused = Client().post(
        "/accounts/login/", {"username": "alice", "password": "correct-horse-battery"}, REMOTE_ADDR=ADDR
    )
    assert paused.status_code == 429
    provider.claims = {"email": "alice@example.com"}
    client = Client()
    assert sign_in(client).status_code == 302
    assert client.get("/").status_code == 200


# --- every bad answer is refused, nothing made, the refusal recorded -------------------------------

BAD_TOKENS = [
    ("stranger", {}, "bad_signature"),
    ("rsa", {"aud": "another-app"}, "wrong_audience"),
    ("rsa", {"aud": ["another-app", CLIENT_ID]}, "wrong_audience"),  # several audiences, no azp
    ("rsa", {"iss": "https://evil.example"}, "wrong_issuer"),
    ("rsa", {"exp": 1_000_000_000, "iat": 999_999_000}, "expired"),
    ("rsa", {"nonce": "not-the-one-we-sent"}, "wrong_nonce"),
    ("rsa", {"nonce": DROP}, "wrong_nonce"),
    ("rsa", {"email_verified": False}, "email_not_verified"),
    ("none", {}, "bad_algorithm"),
    ("hs256", {}, "bad_algorithm"),
]


@pytest.mark.parametrize("sign_with,claims,reason", BAD_TOKENS)
def test_a_bad_id_token_is_refused_and_no_account_is_made(provider, acme, alice, sign_with, claims, reason):
    invite(acme, "erin@example.com", Role.REVIEWER, by=alice)
    provider.sign_with, provider.claims = sign_with, claims
    users = User.objects.count()
    client = Client()
    response = sign_in(client)
    assert response.status_code == 403
    assert refused_reason(response) == reason
    assert User.objects.count() == users
    assert client.get("/").status_code == 302  # still signed out
    with scopes_disabled():
        assert Invitation.objects.get(tenant=acme).accepted_at is None
    last_action, after = audit_actions(acme)[-1]
    if sign_with in ("rsa",):
        # Signed by the provider: the email it names is believed, and the workspace that invited it sees the refusal.
        assert last_action == "accounts.sso.refused" and after["reason"] == reason
        assert after["email"] == "erin@example.com"
    else:
        assert last_action == "tenants.invitation.created"  # an unverified token names nobody to audit for


def test_a_forged_token_is_logged_as_refused(provider, acme, caplog):
    provider.sign_with = "stranger"
    with caplog.at_level(logging.WARNING, logger="tenants.sso"):
        response = sign_in(Client())
    assert response.status_code == 403
    assert "The ID token's signature does not match the identity provider's key." in shown(response)
    assert "SSO sign-in refused (bad_signature) for an unverified person" in caplog.text


def test_es256_tokens_are_accepted(provider, acme, alice):
    provider.sign_with, provider.claims = "ec", {"email": "alice@example.com"}
    assert sign_in(Client()).status_code == 302


def test_email_verified_can_come_from_userinfo(provider, acme, alice):
    provider.claims = {"email": DROP, "email_verified": DROP}
    provider.userinfo = {"email": "alice@example.com", "email_verified": True}
    client = Client()
    assert sign_in(client).status_code == 302
    assert client.get("/").status_code == 200


def test_unverified_email_in_userinfo_is_refused(provider, acme, alice):
    provider.claims = {"email": DROP, "email_verified": DROP}
    provider.userinfo = {"email": "alice@example.com", "email_verified": False}
    response = sign_in(Client())
    assert response.status_code == 403 and refused_reason(response) == "email_not_verified"


def test_a_state_works_once(provider, acme, alice):
    provider.claims = {"email": "alice@example.com"}
    client = Client()
    callback = provider_redirect(start(client))
    assert client.get(callback).status_code == 302
    client.post("/accounts/logout/")
    replay = client.get(callback)
    assert replay.status_code == 400 and refused_reason(replay) == "unknown_state"
    assert "This sign-in link has expired or was already used." in shown(replay)


def test_a_state_from_another_browser_is_refused(provider, acme, alice):
    provider.claims = {"email": "alice@example.com"}
    callback = provider_redirect(start(Client()))
    victim = Client()
    response = victim.get(callback)
    assert response.status_code == 400 and refused_reason(response) == "unknown_state"
    assert victim.get("/").status_code == 302


def test_the_provider_saying_no_is_shown(provider, acme):
    client = Client()
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    response = client.get(
        f"/accounts/oidc/callback/?state={state}&error=access_denied&error_description=User+cancelled"
    )
    assert response.status_code == 403
    assert "The identity provider did not sign you in: access_denied. User cancelled" in shown(response)


def test_a_token_endpoint_redirect_to_another_host_is_not_followed(provider, acme, alice):
    with WebhookReceiver() as elsewhere:
        provider.token_redirect = elsewhere.url.replace("127.0.0.1", "localhost")
        response = sign_in(Client())
        assert response.status_code == 502
        assert refused_reason(response) == "provider_error"
        assert "which is not followed" in shown(response)
        assert elsewhere.received == []
    assert User.objects.count() == 1


def test_discovery_naming_another_issuer_is_refused(provider, settings, acme):
    settings.OIDC_ISSUER = provider.issuer + "/"
    response = Client().get("/accounts/oidc/login/")
    assert response.status_code == 502
    assert f"The identity provider calls itself '{provider.issuer}', not '{provider.issuer}/' as configured." in (
        shown(response)
    )


def test_next_pointing_elsewhere_is_dropped(provider, acme, alice):
    provider.claims = {"email": "alice@example.com"}
    response = sign_in(Client(), "https://evil.example/")
    assert response["Location"] == "/"


# --- OIDC_ONLY ----------------------------------------------------------------------------------


def test_oidc_only_hides_the_password_form_and_refuses_a_posted_password(provider, settings, acme, alice):
    settings.OIDC_ONLY = True
    page = Client().get("/accounts/login/")
    assert "Sign in with Example ID" in page.text
    assert 'name="password"' not in page.text
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"})
    assert response.status_code == 403
    assert "Password sign-in is turned off on this server. Sign in with Example ID instead." in shown(response)
    assert client.get("/").status_code == 302  # not signed in


def test_oidc_only_turns_off_choosing_a_password_on_an_invitation_link(provider, settings, acme, alice):
    settings.OIDC_ONLY = True
    invitation, token = invitations.invitation_create(
        tenant=acme, email="erin@example.com", role=Role.VIEWER, actor=Actor(user=alice)
    )
    client = Client()
    page = client.get(f"/invitations/{token}/")
    assert page.status_code == 200
    assert "Sign in with Example ID as erin@example.com: the invitation is accepted as you sign in." in shown(page)
    assert 'name="password"' not in page.text
    posted = client.post(
        f"/invitations/{token}/", {"password": "a-long-new-passphrase", "password2": "a-long-new-passphrase"}
    )
    assert posted.status_code == 403
    assert User.objects.filter(username="erin@example.com").count() == 0
    # The button on the invitation page signs in and joins.
    sso_url = re.search(r'href="([^"]+)" data-testid="sso-button"', page.text).group(1)
    response = client.get(provider_redirect(client.get(html.unescape(sso_url))["Location"]))
    assert response.status_code == 302 and response["Location"] == "/"
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user__username="erin@example.com").role == Role.VIEWER


def test_an_invitation_link_offers_sso_beside_choosing_a_password(provider, acme, alice):
    _, token = invitations.invitation_create(
        tenant=acme, email="erin@example.com", role=Role.VIEWER, actor=Actor(user=alice)
    )
    page = Client().get(f"/invitations/{token}/")
    assert 'name="password"' in page.text
    assert 'data-testid="sso-button">Sign in with Example ID</a>' in page.text


def test_oidc_only_refuses_passwords_in_the_backend_too(provider, settings, alice):
    from django.contrib.auth import authenticate

    assert authenticate(username="alice", password="correct-horse-battery") == alice
    settings.OIDC_ONLY = True
    assert authenticate(username="alice", password="correct-horse-battery") is None


# --- whose audit log ------------------------------------------------------------------------------


def test_a_refusal_is_audited_only_in_the_workspaces_of_that_person(provider, acme, alice, globex, charlie):
    provider.claims = {"email": "alice@example.com", "nonce": "stolen"}
    before = len(audit_actions(globex))
    response = sign_in(Client())
    assert response.status_code == 403
    action, after = audit_actions(acme)[-1]
    assert action == "accounts.sso.refused"
    assert after == {
        "reason": "wrong_nonce",
        "email": "alice@example.com",
        "issuer": provider.issuer,
        "subject": "person-1",
    }
    assert len(audit_actions(globex)) == before


def test_signing_in_audits_in_the_persons_workspaces_only(provider, acme, alice, globex):
    before = len(audit_actions(globex))
    provider.claims = {"email": "alice@example.com"}
    assert sign_in(Client()).status_code == 302
    assert audit_actions(acme)[-1][0] == "accounts.sso.signed_in"
    assert len(audit_actions(globex)) == before


# --- the provider's side ------------------------------------------------------------------------


def test_client_secret_post_when_the_provider_supports_only_that(provider, acme, alice, monkeypatch):
    discovery = provider.discovery
    monkeypatch.setattr(
        provider, "discovery", lambda: {**discovery(), "token_endpoint_auth_methods_supported": ["client_secret_post"]}
    )
    provider.claims = {"email": "alice@example.com"}
    response = sign_in(Client())
    # This provider wants HTTP Basic, so it refuses: what matters is what was sent.
    sent = provider.token_requests[-1]
    assert sent["authorization"] is None
    assert sent["form"]["client_id"] == CLIENT_ID and sent["form"]["client_secret"] == CLIENT_SECRET
    assert response.status_code == 502
    assert "The identity provider refused the sign-in code (invalid_client)." in shown(response)
    assert User.objects.count() == 1


def test_a_code_that_does_not_match_the_pkce_verifier_is_refused_by_the_provider(provider, acme, alice):
    client = Client()
    callback = provider_redirect(start(client))
    # Another attempt in the same session: its state is fresh, but the code was issued for the first.
    other_state = parse_qs(urlsplit(start(client)).query)["state"][0]
    code = parse_qs(urlsplit(callback).query)["code"][0]
    response = client.get(f"/accounts/oidc/callback/?code={code}&state={other_state}")
    assert response.status_code == 502
    assert "The identity provider refused the sign-in code (invalid_grant)." in shown(response)
    assert client.get("/").status_code == 302


def test_an_unreachable_provider_is_a_clear_page(provider, settings, db):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens on discard
    response = Client().get("/accounts/oidc/login/")
    assert response.status_code == 502
    assert "The identity provider's discovery document did not answer (ConnectError)." in shown(response)


def test_an_http_issuer_off_loopback_is_refused(provider, settings, db):
    settings.OIDC_ISSUER = "http://id.example.com"
    response = Client().get("/accounts/oidc/login/")
    assert response.status_code == 502
    assert "is not an https URL" in shown(response)


# --- roles from the provider's groups -------------------------------------------------------------


@pytest.fixture
def group_roles(settings):
    settings.OIDC_GROUPS_CLAIM = "groups"
    settings.OIDC_GROUP_ROLES = ["gr-acme-admins=acme:admin", "gr-acme=acme:viewer", "gr-ghost=nowhere:viewer"]


def test_a_mapped_group_makes_a_member_with_the_highest_granted_role(provider, group_roles, acme, globex):
    provider.claims = {"email": "gwen@example.com", "groups": ["gr-acme", "gr-acme-admins", "gr-ghost", "other"]}
    client = Client()
    assert sign_in(client).status_code == 302
    gwen = User.objects.get(username="gwen@example.com")
    with scopes_disabled():
        assert list(Membership.objects.filter(user=gwen).values_list("tenant__slug", "role")) == [("acme", "admin")]
    created = [(a, after) for a, after in audit_actions(acme) if a == "tenants.membership.created"][-1]
    assert created[1] == {"user": "gwen@example.com", "role": "admin"}


def test_groups_can_come_from_userinfo_and_only_ever_raise_a_role(provider, group_roles, acme, alice, bob):
    provider.claims = {"email": "bob@example.com"}
    provider.userinfo = {"groups": ["gr-acme"]}  # viewer: lower than bob's reviewer
    assert sign_in(Client()).status_code == 302
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=bob).role == Role.REVIEWER
    provider.userinfo = {"groups": ["gr-acme-admins"]}
    assert sign_in(Client()).status_code == 302
    with scopes_disabled():
        assert Membership.objects.get(tenant=acme, user=bob).role == Role.ADMIN


def test_no_mapped_group_and_no_invitation_is_still_refused(provider, group_roles, acme):
    provider.claims = {"email": "gwen@example.com", "groups": ["other"]}
    response = sign_in(Client())
    assert response.status_code == 403 and refused_reason(response) == "unknown_person"


def test_a_mistyped_group_grant_stops_the_server_at_its_checks(settings):
    from tenants.sso import check_group_roles

    settings.OIDC_GROUPS_CLAIM = "groups"
    settings.OIDC_GROUP_ROLES = ["gr-acme=acme:owner"]
    [error] = check_group_roles()
    assert error.msg == (
        "OIDC_GROUP_ROLES entry 'gr-acme=acme:owner' is not GROUP=WORKSPACE-SLUG:ROLE "
        "with a role of admin, reviewer, viewer."
    )
    settings.OIDC_GROUPS_CLAIM = ""
    settings.OIDC_GROUP_ROLES = ["gr-acme=acme:admin"]
    assert [e.id for e in check_group_roles()] == ["groundrule.E102"]


def test_an_email_claim_that_is_not_an_email_does_not_match_a_username(provider, acme, alice):
    provider.claims = {"email": "alice"}
    response = sign_in(Client())
    assert response.status_code == 403 and refused_reason(response) == "bad_email"
    assert "The identity provider's email 'alice' is not an email address." in shown(response)


def test_userinfo_cannot_vouch_for_an_email_it_does_not_name(provider, acme, alice):
    # The token names alice without saying she is verified; userinfo verifies someone else.
    provider.claims = {"email": "alice@example.com", "email_verified": DROP}
    provider.userinfo = {"email": "mallory@elsewhere.example", "email_verified": True}
    client = Client()
    response = sign_in(client)
    assert response.status_code == 403 and refused_reason(response) == "unknown_person"
    assert "No account or invitation for mallory@elsewhere.example." in shown(response)
    assert client.get("/").status_code == 302
