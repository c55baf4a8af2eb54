"""A workspace that requires two-factor authentication, single sign-on that vouches for it
(OIDC_TRUSTS_MFA), and an admin's reset of a member's second factors (docs/two-factor.md)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django_scopes import scopes_disabled
from oidc_provider import provider_fixtures
from pages_support import signed_in
from test_sso_oidc import sign_in as sso_sign_in
from two_factor_support import code_at, enrol, password_step, signed_in_as, submit_code

from tenants import authenticator, services, two_factor
from tenants.audit import Actor
from tenants.models import AuditEvent, Membership, RecoveryCode, Role, TotpDevice, WebAuthnCredential
from tenants.signals import credentials_changed

pytestmark = pytest.mark.django_db

SYSTEM = Actor.system("tests")


def require(tenant, required=True):
    authenticator.tenant_set_require_two_factor(tenant=tenant, required=required, actor=SYSTEM)


def last_event(tenant) -> AuditEvent:
    with scopes_disabled():
        return AuditEvent.objects.filter(tenant=tenant).order_by("seq").last()


def membership_of(user, tenant) -> Membership:
    with scopes_disabled():
        return Membership.objects.get(user=user, tenant=tenant)


# --- the switch ------------------------------------------------------------------------------------


def test_an_admin_turns_the_rule_on_and_off_audited(alice, acme):
    client = signed_in(alice)
    page = client.get("/settings/members/")
    assert "Require two-factor authentication for members" in page.text
    response = client.post("/settings/members/two-factor/", {"require_two_factor": "on"})
    assert response.status_code == 302 and response["Location"] == "/settings/members/"
    acme.refresh_from_db()
    assert acme.require_two_factor
    event = last_event(acme)
    assert event.action == "tenants.tenant.require_two_factor_changed" and event.actor_label == "alice"
    assert (event.before, event.after) == ({"require_two_factor": False}, {"require_two_factor": True})
    # Alice has no second factor herself: the rule now applies to her as well, switch included.
    assert client.get("/settings/members/")["Location"] == "/account/security/"
    assert client.post("/settings/members/two-factor/", {})["Location"] == "/account/security/"
    acme.refresh_from_db()
    assert acme.require_two_factor
    enrol(alice)  # a new second factor ends every other session (docs/sign-in.md): sign in again
    client = signed_in(alice)
    client.post("/settings/members/two-factor/", {})  # an unticked box sends nothing
    acme.refresh_from_db()
    assert not acme.require_two_factor
    assert client.get("/settings/members/").status_code == 200


def test_only_admins_turn_the_rule_on(bob, acme):
    assert signed_in(bob).post("/settings/members/two-factor/", {"require_two_factor": "on"}).status_code == 403
    acme.refresh_from_db()
    assert not acme.require_two_factor


def test_garbage_in_the_switch_turns_nothing_on(alice, acme):
    response = signed_in(alice).post("/settings/members/two-factor/", {"require_two_factor": "maybe\x00"})
    assert response.status_code == 302
    acme.refresh_from_db()
    assert acme.require_two_factor is True  # any ticked box is "on", as browsers send it; never a 500


# --- enforcement -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/runs/", "/violations/", "/policies/", "/settings/members/", "/welcome/"])
def test_a_member_without_a_second_factor_sees_only_enrolment(bob, acme, path):
    require(acme)
    response = signed_in(bob).get(path)
    assert response.status_code == 302 and response["Location"] == "/account/security/"


def test_the_enrolment_pages_and_sign_out_stay_open(bob, acme):
    require(acme)
    client = signed_in(bob)
    page = client.get("/account/security/")
    assert page.status_code == 200
    assert "Acme Research requires two-factor authentication." in page.text
    assert client.post("/account/two-factor/start/")["Location"] == "/account/two-factor/setup/"
    assert client.get("/account/two-factor/setup/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302
    assert signed_in_as(client) is None


def test_htmx_requests_are_sent_to_enrolment_too(bob, acme):
    require(acme)
    response = signed_in(bob).get("/runs/", HTTP_HX_REQUEST="true")
    assert response.status_code == 204 and response["HX-Redirect"] == "/account/security/"


def test_api_key_requests_are_untouched(api, bob, acme):
    require(acme)
    assert api.get("/api/v1/policies/").status_code == 200


def test_enrolling_opens_the_dashboard(bob, acme):
    require(acme)
    client = signed_in(bob)
    client.post("/account/two-factor/start/")
    secret = authenticator.secret_of(authenticator.pending_device(bob))
    assert client.post("/account/two-factor/setup/", {"code": code_at(secret)}).status_code == 200
    assert client.get("/runs/").status_code == 200
    assert "requires two-factor" not in client.get("/account/security/").text


def test_a_security_key_counts_as_a_second_factor(bob, acme):
    require(acme)
    WebAuthnCredential.objects.create(user=bob, name="key", credential_id="abc", public_key=b"k")
    assert signed_in(bob).get("/runs/").status_code == 200


def test_any_workspace_that_requires_it_applies_whichever_is_current(bob, acme, globex):
    services.membership_set(tenant=globex, user=bob, role=Role.ADMIN, actor=SYSTEM)
    require(acme)
    client = signed_in(bob)
    session = client.session
    session["tenant_id"] = globex.pk
    session.save()
    assert client.get("/runs/")["Location"] == "/account/security/"


def test_members_of_other_workspaces_are_not_affected(charlie, acme, globex):
    require(acme)
    assert signed_in(charlie).get("/runs/").status_code == 200


def test_members_page_shows_who_has_a_second_factor(alice, bob, dave, acme):
    enrol(bob)
    client = signed_in(alice)
    page = client.get("/settings/members/").text
    rows = {
        name: page.split(f'id="member-{membership_of(u, acme).pk}"')[1].split("</tr>")[0]
        for name, u in [("alice", alice), ("bob", bob), ("dave", dave)]
    }
    assert 'badge-on">On' in rows["bob"] and "Reset 2FA" in rows["bob"]
    assert 'badge-off">Off' in rows["alice"] and 'badge-off">Off' in rows["dave"] and "Reset 2FA" not in rows["dave"]


# --- single sign-on ----------------------------------------------------------------------------------


provider_server, provider = provider_fixtures("bob@example.com")


def test_sso_asks_for_groundrules_second_factor_unless_the_provider_is_trusted(provider, bob, settings):
    secret, _ = enrol(bob)
    settings.OIDC_TRUSTS_MFA = False
    client = Client()
    response = sso_sign_in(client, "/runs/")
    assert response.status_code == 302 and response["Location"] == "/accounts/two-factor/"
    assert signed_in_as(client) is None
    finished = submit_code(client, code_at(secret, steps=1))
    assert finished.status_code == 302 and finished["Location"] == "/runs/"
    assert signed_in_as(client) == str(bob.pk)

    settings.OIDC_TRUSTS_MFA = True
    trusted = Client()
    response = sso_sign_in(trusted, "/runs/")
    assert response.status_code == 302 and response["Location"] == "/runs/"
    assert signed_in_as(trusted) == str(bob.pk)


def test_a_trusted_sso_sign_in_satisfies_the_rule_and_an_untrusted_one_does_not(provider, bob, acme, settings):
    require(acme)
    settings.OIDC_TRUSTS_MFA = True
    trusted = Client()
    sso_sign_in(trusted)
    assert trusted.get("/runs/").status_code == 200
    # The operator stops trusting the provider: the same session must now enrol.
    settings.OIDC_TRUSTS_MFA = False
    assert trusted.get("/runs/")["Location"] == "/account/security/"
    untrusted = Client()
    sso_sign_in(untrusted)
    assert untrusted.get("/runs/")["Location"] == "/account/security/"
    # A password sign-in never counts as the provider's, even with the setting on.
    settings.OIDC_TRUSTS_MFA = True
    by_password = Client()
    password_step(by_password, "bob")
    assert by_password.get("/runs/")["Location"] == "/account/security/"


# --- an admin's reset --------------------------------------------------------------------------------


@pytest.fixture
def changes():
    seen: list[tuple[str, bool]] = []

    def listen(sender, user, request, **kwargs):
        seen.append((user.get_username(), request is not None))

    credentials_changed.connect(listen)
    yield seen
    credentials_changed.disconnect(listen)


def test_an_admin_resets_a_members_second_factors(alice, bob, acme, changes):
    enrol(bob)
    WebAuthnCredential.objects.create(user=bob, name="key", credential_id="abc", public_key=b"k")
    changes.clear()
    client = signed_in(alice)
    response = client.post(f"/settings/members/{membership_of(bob, acme).pk}/two-factor/reset/")
    assert response.status_code == 302
    assert "Second factors of bob reset" in client.get("/settings/members/").text
    assert not TotpDevice.objects.filter(user=bob).exists()
    assert not RecoveryCode.objects.filter(user=bob).exists()
    assert not WebAuthnCredential.objects.filter(user=bob).exists()
    event = last_event(acme)
    assert event.action == "accounts.two_factor.reset" and event.actor_label == "alice"
    assert event.after == {"removed": {"totp": 1, "recovery_codes": 10, "webauthn": 1}}
    assert changes == [("bob", False)]
    fresh = Client()
    assert password_step(fresh, "bob")["Location"] == "/"


def test_a_reset_is_refused_for_a_member_of_a_workspace_the_admin_does_not_run(alice, bob, acme, globex):
    services.membership_set(tenant=globex, user=bob, role=Role.VIEWER, actor=SYSTEM)
    enrol(bob)
    client = signed_in(alice)
    response = client.post(f"/settings/members/{membership_of(bob, acme).pk}/two-factor/reset/")
    assert response.status_code == 403
    assert "also belongs to a workspace where you are not an admin" in response.text
    assert two_factor.has_second_factor(bob)
    # An admin of both workspaces may.
    services.membership_set(tenant=globex, user=alice, role=Role.ADMIN, actor=SYSTEM)
    assert client.post(f"/settings/members/{membership_of(bob, acme).pk}/two-factor/reset/").status_code == 302
    assert not two_factor.has_second_factor(bob)
    assert last_event(globex).action == "accounts.two_factor.reset"


def test_a_superuser_admin_may_reset_across_workspaces(alice, bob, acme, globex):
    services.membership_set(tenant=globex, user=bob, role=Role.VIEWER, actor=SYSTEM)
    enrol(bob)
    get_user_model().objects.filter(pk=alice.pk).update(is_superuser=True)
    alice.refresh_from_db()
    client = signed_in(alice)
    assert client.post(f"/settings/members/{membership_of(bob, acme).pk}/two-factor/reset/").status_code == 302
    assert not two_factor.has_second_factor(bob)


def test_another_workspaces_member_is_a_404(alice, charlie, globex):
    enrol(charlie)
    response = signed_in(alice).post(f"/settings/members/{membership_of(charlie, globex).pk}/two-factor/reset/")
    assert response.status_code == 404
    assert two_factor.has_second_factor(charlie)
    assert signed_in(alice).post("/settings/members/999999/two-factor/reset/").status_code == 404


def test_only_admins_reset(bob, dave, acme):
    enrol(dave)
    response = signed_in(bob).post(f"/settings/members/{membership_of(dave, acme).pk}/two-factor/reset/")
    assert response.status_code == 403
    assert two_factor.has_second_factor(dave)


def test_a_reset_is_a_post(alice, dave, acme):
    enrol(dave)
    url = f"/settings/members/{membership_of(dave, acme).pk}/two-factor/reset/"
    assert signed_in(alice).get(url).status_code == 405
    assert two_factor.has_second_factor(dave)


def test_only_admins_see_who_has_a_second_factor(bob, acme):
    enrol(bob)
    page = signed_in(bob).get("/settings/members/").text
    assert "member-two-factor" not in page and "Reset 2FA" not in page


def test_the_two_factor_column_costs_one_query_whatever_the_number_of_members(alice, acme):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = signed_in(alice)
    with CaptureQueriesContext(connection) as few:
        client.get("/settings/members/")
    for i in range(6):
        user = get_user_model().objects.create_user(username=f"member{i}", password="x")
        services.membership_set(tenant=acme, user=user, role=Role.VIEWER, actor=SYSTEM)
        enrol(user)
    with CaptureQueriesContext(connection) as many:
        page = client.get("/settings/members/").text
    assert page.count('badge-on">On') == 6
    assert len(many.captured_queries) == len(few.captured_queries)
