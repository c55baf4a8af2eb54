"""Settings pages: secrets, API keys, members, and who may do what with them."""

import json

import pytest
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled

from tenants import services
from tenants.audit import Actor
from tenants.models import (
    ApiKey,
    AuditEvent,
    Membership,
    Role,
    TenantSecret,
    hash_api_key,
)

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
SYSTEM = Actor.system("tests")
PLAINTEXT = "sk-live-0123456789abcdefSECRET"


def set_secret(tenant, name="OPENAI_API_KEY", value=PLAINTEXT):
    return services.secret_set(tenant=tenant, name=name, value=value, actor=SYSTEM)


def secrets_of(tenant) -> dict[str, str]:
    with scopes_disabled():
        return {s.name: s.reveal() for s in TenantSecret.objects.filter(tenant=tenant)}


# --- secrets -------------------------------------------------------------------------------------


def test_admin_lists_secrets_by_name_and_masked_hint_only(client, alice, acme):
    set_secret(acme)
    client.force_login(alice)
    response = client.get("/settings/secrets/")
    assert response.status_code == 200
    assert "OPENAI_API_KEY" in response.text and "••••CRET" in response.text
    assert PLAINTEXT not in response.text
    assert "no-store" in response["Cache-Control"]


def test_admin_sets_and_replaces_a_secret_and_never_sees_it_again(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/secrets/", {"name": "OPENAI_API_KEY", "value": PLAINTEXT})
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert "Secret OPENAI_API_KEY saved." in page.text and PLAINTEXT not in page.text
    assert secrets_of(acme) == {"OPENAI_API_KEY": PLAINTEXT}

    replace_form = client.get("/settings/secrets/?replace=OPENAI_API_KEY")
    assert 'value="OPENAI_API_KEY"' in replace_form.text and "Replace OPENAI_API_KEY" in replace_form.text
    assert PLAINTEXT not in replace_form.text
    client.post("/settings/secrets/", {"name": "OPENAI_API_KEY", "value": "sk-new-value-9876"})
    assert secrets_of(acme) == {"OPENAI_API_KEY": "sk-new-value-9876"}
    with scopes_disabled():
        events = list(
            AuditEvent.objects.filter(tenant=acme, action__startswith="tenants.secret.").values_list(
                "action", flat=True
            )
        )
    assert sorted(events) == ["tenants.secret.created", "tenants.secret.updated"]


def test_a_secret_value_is_not_rendered_back_even_after_an_error(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/secrets/", {"name": "not a valid name", "value": PLAINTEXT})
    assert response.status_code == 400
    assert "Use an environment-variable style name" in response.text
    assert PLAINTEXT not in response.text
    assert 'name="value"' in response.text and 'value="not a valid name"' in response.text
    assert secrets_of(acme) == {}


def test_an_empty_secret_value_is_refused_next_to_the_field(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/secrets/", {"name": "GROQ_API_KEY", "value": ""})
    assert response.status_code == 400
    start = response.text.index('id="id_value_error"')
    assert "This field is required." in response.text[start : start + 200]
    assert secrets_of(acme) == {}


def test_admin_deletes_a_secret(client, alice, acme):
    set_secret(acme)
    client.force_login(alice)
    response = client.post("/settings/secrets/OPENAI_API_KEY/delete/", **HTMX)
    assert response.status_code == 200 and response.text == ""
    assert json.loads(response["HX-Trigger"])["toast"]["message"] == "Secret OPENAI_API_KEY deleted."
    assert secrets_of(acme) == {}
    assert client.post("/settings/secrets/OPENAI_API_KEY/delete/").status_code == 404


def test_deleting_a_name_no_secret_can_have_is_a_404(client, alice, acme):
    # A NUL in the path reached PostgreSQL, which refuses it in text: a 500.
    client.force_login(alice)
    assert client.post("/settings/secrets/%00/delete/").status_code == 404


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_reviewers_and_viewers_cannot_read_or_change_secrets(client, request, acme, who):
    set_secret(acme)
    client.force_login(request.getfixturevalue(who))
    page = client.get("/settings/secrets/")
    assert page.status_code == 403 and "OPENAI_API_KEY" not in page.text and "••••" not in page.text
    assert client.post("/settings/secrets/", {"name": "OPENAI_API_KEY", "value": "stolen"}).status_code == 403
    assert client.post("/settings/secrets/OPENAI_API_KEY/delete/").status_code == 403
    assert secrets_of(acme) == {"OPENAI_API_KEY": PLAINTEXT}


def test_another_tenants_secret_is_not_found(client, charlie, acme, globex):
    set_secret(acme)
    client.force_login(charlie)
    assert 'id="secret-OPENAI_API_KEY"' not in client.get("/settings/secrets/").text
    assert client.post("/settings/secrets/OPENAI_API_KEY/delete/").status_code == 404
    assert secrets_of(acme) == {"OPENAI_API_KEY": PLAINTEXT}
    # setting the same name in globex creates globex's own secret, acme's is untouched
    client.post("/settings/secrets/", {"name": "OPENAI_API_KEY", "value": "globex-value-1234"})
    assert secrets_of(acme) == {"OPENAI_API_KEY": PLAINTEXT}
    assert secrets_of(globex) == {"OPENAI_API_KEY": "globex-value-1234"}


def test_the_plaintext_appears_in_no_settings_response(client, alice, acme):
    client.force_login(alice)
    responses = [client.post("/settings/secrets/", {"name": "ANTHROPIC_API_KEY", "value": PLAINTEXT}, follow=True)]
    for url in (
        "/settings/secrets/",
        "/settings/secrets/?replace=ANTHROPIC_API_KEY",
        "/settings/api-keys/",
        "/settings/members/",
        "/policies/",
        "/",
        "/audit/",
    ):
        responses.append(client.get(url))
    for response in responses:
        assert PLAINTEXT not in response.content.decode(), response.request["PATH_INFO"]


# --- API keys ------------------------------------------------------------------------------------


def test_admin_creates_an_api_key_and_sees_it_once(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/api-keys/", {"name": "research-agent prod"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    raw = response.context["raw_key"]
    assert raw.startswith("gr_") and raw in response.text and "shown only this once" in response.text
    with scopes_disabled():
        key = ApiKey.objects.get(tenant=acme, name="research-agent prod")
    assert key.key_hash == hash_api_key(raw) and key.created_by == alice
    # the list shows the prefix, never the key again
    later = client.get("/settings/api-keys/")
    assert key.prefix in later.text and raw not in later.text and "Never" in later.text
    # and the key works against the API
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/api/v1/ping/").status_code == 200  # a new key is an agent key: ping, not policies
    assert "Never" not in client.get("/settings/api-keys/").text


def test_an_api_key_needs_a_name(client, alice, acme):
    client.force_login(alice)
    response = client.post("/settings/api-keys/", {"name": "  "})
    assert response.status_code == 400 and "This field is required." in response.text
    assert response.context["raw_key"] is None
    with scopes_disabled():
        assert not ApiKey.objects.filter(tenant=acme).exists()


def test_admin_revokes_a_key_in_place(client, alice, acme):
    key, raw = services.api_key_create(tenant=acme, name="old", actor=SYSTEM)
    client.force_login(alice)
    response = client.post(f"/settings/api-keys/{key.pk}/revoke/", **HTMX)
    assert response.status_code == 200
    assert response.text.lstrip().startswith(f'<tr id="key-{key.pk}"') and "Revoked" in response.text
    assert "<html" not in response.text
    with scopes_disabled():
        assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.get("/api/v1/policies/").status_code == 401


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_reviewers_and_viewers_cannot_see_or_manage_keys(client, request, acme, who):
    key, _ = services.api_key_create(tenant=acme, name="prod", actor=SYSTEM)
    client.force_login(request.getfixturevalue(who))
    assert client.get("/settings/api-keys/").status_code == 403
    assert client.post("/settings/api-keys/", {"name": "mine"}).status_code == 403
    assert client.post(f"/settings/api-keys/{key.pk}/revoke/").status_code == 403
    with scopes_disabled():
        assert ApiKey.objects.filter(tenant=acme).count() == 1
        assert ApiKey.objects.get(pk=key.pk).revoked_at is None


def test_another_tenants_key_is_not_found(client, charlie, acme):
    key, _ = services.api_key_create(tenant=acme, name="acme prod", actor=SYSTEM)
    client.force_login(charlie)
    assert "acme prod" not in client.get("/settings/api-keys/").text
    assert client.post(f"/settings/api-keys/{key.pk}/revoke/").status_code == 404
    with scopes_disabled():
        assert ApiKey.objects.get(pk=key.pk).revoked_at is None


# --- members -------------------------------------------------------------------------------------


def membership(tenant, user) -> Membership | None:
    with scopes_disabled():
        return Membership.objects.filter(tenant=tenant, user=user).first()


@pytest.mark.parametrize("who", ["alice", "bob", "dave"])
def test_every_member_reads_the_members_list(client, request, alice, bob, dave, who):
    client.force_login(request.getfixturevalue(who))
    response = client.get("/settings/members/")
    assert response.status_code == 200
    for name in ("alice", "bob", "dave"):
        assert name in response.text
    assert ("Add a member" in response.text) is (who == "alice")


def test_admin_adds_an_existing_user_by_email(client, alice, acme):
    erin = get_user_model().objects.create_user(username="erin", email="Erin@Example.com", password="x" * 12)
    client.force_login(alice)
    response = client.post("/settings/members/", {"user": "erin@example.com", "role": "reviewer"})
    assert response.status_code == 302
    assert membership(acme, erin).role == Role.REVIEWER


def test_adding_an_unknown_user_or_a_member_again_is_refused(client, alice, bob, acme):
    client.force_login(alice)
    unknown = client.post("/settings/members/", {"user": "nobody@example.com", "role": "viewer"})
    assert unknown.status_code == 400 and "No account with that username or email." in unknown.text
    again = client.post("/settings/members/", {"user": "bob", "role": "admin"})
    assert again.status_code == 400 and "bob is already a member" in again.text
    assert membership(acme, bob).role == Role.REVIEWER
    bad_role = client.post("/settings/members/", {"user": "bob", "role": "owner"})
    assert bad_role.status_code == 400 and "Choose one of: admin, reviewer, viewer." in bad_role.text


def test_admin_changes_a_role_in_place(client, alice, bob, acme):
    client.force_login(alice)
    m = membership(acme, bob)
    response = client.post(f"/settings/members/{m.pk}/role/", {"role": "admin"}, **HTMX)
    assert response.status_code == 200 and response.text.lstrip().startswith(f'<tr id="member-{m.pk}"')
    assert membership(acme, bob).role == Role.ADMIN
    # without JavaScript
    response = client.post(f"/settings/members/{m.pk}/role/", {"role": "viewer"})
    assert response.status_code == 302 and membership(acme, bob).role == Role.VIEWER


def test_the_last_admin_can_be_neither_demoted_nor_removed(client, alice, bob, acme):
    client.force_login(alice)
    mine = membership(acme, alice)
    demote = client.post(f"/settings/members/{mine.pk}/role/", {"role": "viewer"}, **HTMX)
    assert demote.status_code == 400 and "A tenant must keep at least one admin." in demote.text
    assert membership(acme, alice).role == Role.ADMIN
    remove = client.post(f"/settings/members/{mine.pk}/remove/", **HTMX)
    assert remove["HX-Reswap"] == "none"
    assert json.loads(remove["HX-Trigger"])["toast"]["message"] == "A tenant must keep at least one admin."
    assert membership(acme, alice) is not None
    page = client.get("/settings/members/").text
    assert "Last admin" in page


def test_admin_removes_a_member(client, alice, dave, acme):
    client.force_login(alice)
    m = membership(acme, dave)
    response = client.post(f"/settings/members/{m.pk}/remove/")
    assert response.status_code == 302
    assert membership(acme, dave) is None
    client.force_login(dave)
    response = client.get("/policies/")  # no tenant left: the welcome page says how to get one
    assert response.status_code == 302 and response["Location"] == "/welcome/"


@pytest.mark.parametrize("who", ["bob", "dave"])
def test_reviewers_and_viewers_cannot_change_members(client, request, alice, bob, dave, acme, who):
    client.force_login(request.getfixturevalue(who))
    target = membership(acme, dave if who == "bob" else bob)
    assert client.post("/settings/members/", {"user": "alice", "role": "viewer"}).status_code == 403
    assert client.post(f"/settings/members/{target.pk}/role/", {"role": "admin"}).status_code == 403
    assert client.post(f"/settings/members/{target.pk}/remove/").status_code == 403
    me = membership(acme, request.getfixturevalue(who))
    assert client.post(f"/settings/members/{me.pk}/role/", {"role": "admin"}).status_code == 403
    assert membership(acme, bob).role == Role.REVIEWER and membership(acme, dave).role == Role.VIEWER


def test_another_tenants_member_is_not_found(client, charlie, bob, acme):
    client.force_login(charlie)
    m = membership(acme, bob)
    assert "bob" not in client.get("/settings/members/").text
    assert client.post(f"/settings/members/{m.pk}/role/", {"role": "viewer"}).status_code == 404
    assert client.post(f"/settings/members/{m.pk}/remove/").status_code == 404
    assert membership(acme, bob).role == Role.REVIEWER


def test_settings_navigation_follows_the_role(client, alice, dave):
    client.force_login(alice)
    page = client.get("/settings/members/").text
    assert 'href="/settings/secrets/"' in page and 'href="/settings/api-keys/"' in page
    client.force_login(dave)
    page = client.get("/settings/members/").text
    assert 'href="/settings/secrets/"' not in page and 'href="/settings/api-keys/"' not in page
    assert '<a href="/settings/members/" aria-current="page">Settings</a>' in page


def test_an_admin_may_leave_when_another_admin_stays(client, alice, bob, acme):
    services.membership_set(tenant=acme, user=bob, role=Role.ADMIN, actor=SYSTEM)
    client.force_login(alice)
    mine = membership(acme, alice)
    response = client.post(f"/settings/members/{mine.pk}/remove/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Redirect"] == "/"
    assert membership(acme, alice) is None
    # in no workspace now: the page sends her to the welcome page, which says how to get back in
    response = client.get("/settings/members/")
    assert response.status_code == 302 and response["Location"] == "/welcome/"
