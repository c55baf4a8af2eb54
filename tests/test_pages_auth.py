"""Signing in and out, changing the password, switching tenants, and the layout around every page."""

import pytest
from django_scopes import scopes_disabled

from tenants import services
from tenants.audit import Actor
from tenants.models import Membership, Role

pytestmark = pytest.mark.django_db

SYSTEM = Actor.system("tests")
PASSWORD = "correct-horse-battery"  # tests/conftest.py


def test_sign_in_page_is_a_full_accessible_page(client):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert "<html" in page.text and "Sign in to Groundrule" in page.text
    assert '<label for="id_username">' in page.text and '<label for="id_password">' in page.text
    assert 'aria-label="Main"' not in page.text  # no navigation before signing in


def test_sign_in_goes_to_the_page_asked_for(client, alice):
    page = client.get("/policies/")
    assert page["Location"] == "/accounts/login/?next=/policies/"
    response = client.post(
        "/accounts/login/?next=/policies/", {"username": "alice", "password": PASSWORD, "next": "/policies/"}
    )
    assert response.status_code == 302 and response["Location"] == "/policies/"
    assert client.get("/policies/").status_code == 200


def test_a_wrong_password_is_refused_with_a_message(client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password." in response.text
    assert client.get("/policies/").status_code == 302


def test_sign_out_is_a_post(client, alice):
    client.force_login(alice)
    page = client.get("/policies/").text
    assert 'action="/accounts/logout/"' in page and 'method="post"' in page
    assert client.get("/accounts/logout/").status_code == 405
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert client.get("/policies/").status_code == 302


def test_password_change(client, alice):
    client.force_login(alice)
    form = client.get("/accounts/password/")
    assert form.status_code == 200 and "Change your password" in form.text
    bad = client.post(
        "/accounts/password/",
        {"old_password": "nope", "new_password1": "a-new-long-password", "new_password2": "something-else"},
    )
    assert bad.status_code == 200
    start = bad.text.index('id="id_old_password_error"')
    assert "Your old password was entered incorrectly." in bad.text[start : start + 300]
    ok = client.post(
        "/accounts/password/",
        {"old_password": PASSWORD, "new_password1": "a-new-long-password", "new_password2": "a-new-long-password"},
    )
    assert ok.status_code == 302 and ok["Location"] == "/accounts/password/done/"
    assert "Password changed" in client.get(ok["Location"]).text
    # still signed in here, and the new password is the one that works
    assert client.get("/policies/").status_code == 200
    client.post("/accounts/logout/")
    assert client.login(username="alice", password="a-new-long-password")


def test_password_change_needs_sign_in(client):
    assert client.get("/accounts/password/").status_code == 302


# --- the layout ----------------------------------------------------------------------------------


def test_layout_has_nav_user_menu_and_marks_the_current_section(client, alice):
    client.force_login(alice)
    page = client.get("/policies/").text
    assert 'hx-headers=\'{"X-CSRFToken": "' in page
    assert '<a href="/policies/" aria-current="page">Policies</a>' in page
    for href, label in (
        ("/", "Overview"),
        ("/runs/", "Runs"),
        ("/violations/", "Violations"),
        ("/audit/", "Audit"),
        ("/settings/secrets/", "Settings"),
    ):
        assert f'<a href="{href}">{label}</a>' in page, label
    assert 'href="/accounts/password/"' in page and "Sign out" in page
    assert "/static/vendor/htmx.min.js" in page and "/static/js/app.js" in page
    assert "Acme Research" in page and "badge-role" in page  # the tenant and the role


def test_messages_are_shown(client, alice, make_policy):
    policy = make_policy()
    client.force_login(alice)
    client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"})
    page = client.get(f"/policies/{policy.pk}/").text
    assert 'class="msg msg-success"' in page and "disabled." in page


def test_a_member_of_no_tenant_is_sent_to_the_welcome_page_and_refused_changes(client, django_user_model):
    loner = django_user_model.objects.create_user(username="loner", password=PASSWORD)
    client.force_login(loner)
    response = client.get("/policies/")
    assert response.status_code == 302 and response["Location"] == "/welcome/"
    response = client.post("/policies/new/?category=grounding", {"name": "x"})
    assert response.status_code == 403
    assert "You are not a member of any workspace yet." in response.text
    # the way on is the welcome page, not the overview that would refuse again
    assert 'href="/welcome/">How to join a workspace</a>' in response.text
    assert "Back to the overview" not in response.text


def test_a_forbidden_htmx_action_gets_a_403(client, bob, make_policy):
    policy = make_policy()
    client.force_login(bob)
    response = client.post(f"/policies/{policy.pk}/toggle/", {"enabled": "false"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    assert "This needs the admin role in this tenant." in response.text


# --- tenant switch -------------------------------------------------------------------------------


@pytest.fixture
def alice_in_globex(alice, globex):
    services.membership_set(tenant=globex, user=alice, role=Role.VIEWER, actor=SYSTEM)
    return alice


def test_the_switcher_lists_only_the_users_tenants(client, alice_in_globex, acme, globex, charlie):
    client.force_login(alice_in_globex)
    page = client.get("/policies/").text
    assert 'action="/settings/tenant/"' in page
    assert f'<option value="{acme.pk}" selected>Acme Research · admin</option>' in page
    assert f'<option value="{globex.pk}">Globex · viewer</option>' in page


def test_a_single_tenant_user_gets_no_switcher(client, alice):
    client.force_login(alice)
    assert 'action="/settings/tenant/"' not in client.get("/policies/").text


def test_switching_tenant_changes_what_every_page_shows(client, alice_in_globex, acme, globex, make_policy):
    acme_policy = make_policy(name="Acme policy")
    make_policy(name="Globex policy", tenant=globex)
    client.force_login(alice_in_globex)
    assert "Acme policy" in client.get("/policies/").text
    response = client.post(
        "/settings/tenant/", {"tenant": str(globex.pk), "next": f"/policies/{acme_policy.pk}/history/"}
    )
    # the old tenant's object would be a 404 now: back to the list of that section instead
    assert response.status_code == 302 and response["Location"] == "/policies/"
    page = client.get("/policies/").text
    assert "Globex policy" in page and "Acme policy" not in page and "Switched to Globex." in page
    assert client.get(f"/policies/{acme_policy.pk}/").status_code == 404
    # and the role is the one held in globex: a viewer there
    assert client.post("/policies/new/?category=grounding", {"name": "x"}).status_code == 403
    assert 'href="/policies/new/"' not in page


def test_switching_to_a_tenant_the_user_does_not_belong_to_is_not_found(client, alice, globex, acme):
    client.force_login(alice)
    assert client.post("/settings/tenant/", {"tenant": str(globex.pk)}).status_code == 404
    assert client.post("/settings/tenant/", {"tenant": "not-a-number"}).status_code == 404
    assert client.session.get("tenant_id") is None
    assert client.get("/settings/tenant/").status_code == 405


def test_switch_ignores_an_offsite_next(client, alice_in_globex, globex):
    client.force_login(alice_in_globex)
    response = client.post("/settings/tenant/", {"tenant": str(globex.pk), "next": "https://evil.example/x"})
    assert response["Location"] == "/"


def test_a_switch_survives_losing_the_membership(client, alice_in_globex, globex, acme):
    client.force_login(alice_in_globex)
    client.post("/settings/tenant/", {"tenant": str(globex.pk)})
    with scopes_disabled():
        Membership.objects.filter(tenant=globex, user=alice_in_globex).delete()
    # the session still names globex; the middleware falls back to a tenant alice belongs to
    page = client.get("/policies/")
    assert page.status_code == 200 and "Acme Research" in page.text


def test_anonymous_users_are_sent_to_sign_in_from_every_page(client, acme):
    for url in (
        "/policies/",
        "/policies/new/",
        "/policies/1/",
        "/policies/1/history/",
        "/settings/secrets/",
        "/settings/api-keys/",
        "/settings/members/",
        "/accounts/password/",
    ):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
    for url in ("/policies/1/toggle/", "/policies/validate/", "/settings/tenant/", "/settings/members/"):
        assert client.post(url).status_code == 302, url
