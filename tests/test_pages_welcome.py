"""A first admin who lands somewhere: a superuser in no workspace creates one; anyone else is told
how to get in. Nothing else a signed-in person without a workspace opens is a dead end."""

import pytest
from django.contrib.auth import get_user_model
from django_scopes import scopes_disabled
from page_forms import field_errors

from tenants.models import AuditEvent, Membership, Role, Tenant

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


@pytest.fixture
def root(db):
    """What `manage.py createsuperuser` makes: a superuser who belongs to no tenant."""
    return get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)


@pytest.fixture
def loner(db):
    return get_user_model().objects.create_user("loner", "loner@example.com", PASSWORD)


def sign_in(client, username):
    response = client.post("/accounts/login/", {"username": username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    return client.get("/", follow=True)


def test_a_superuser_with_no_tenant_signs_in_creates_a_workspace_and_lands_on_the_overview_as_admin(client, root):
    page = sign_in(client, "root")
    assert page.redirect_chain == [("/welcome/", 302)]
    assert "Create your first workspace" in page.text and 'name="slug"' in page.text
    assert 'aria-label="Main"' not in page.text  # no navigation to pages that have nothing to show

    response = client.post("/welcome/", {"name": "Acme Research", "slug": "acme"})
    assert response.status_code == 302 and response["Location"] == "/"
    overview = client.get("/")
    assert overview.status_code == 200
    assert "Workspace Acme Research created. You are its admin." in overview.text
    assert '<span class="tenant-name" title="Current tenant">Acme Research</span>' in overview.text
    with scopes_disabled():
        tenant = Tenant.objects.get(slug="acme")
        assert Membership.objects.get(tenant=tenant, user=root).role == Role.ADMIN
        audit = list(AuditEvent.objects.filter(tenant=tenant).order_by("seq").values_list("action", "actor_label"))
    assert audit == [("tenants.tenant.created", "root"), ("tenants.membership.created", "root")]


def test_the_slug_is_made_from_the_name_when_left_empty(client, root):
    client.force_login(root)
    assert client.post("/welcome/", {"name": "Globex Labs Ltd", "slug": ""}).status_code == 302
    assert Tenant.objects.filter(slug="globex-labs-ltd", name="Globex Labs Ltd").exists()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"name": "", "slug": "acme2"}, "name", "This field is required."),
        ({"name": "Acme Two", "slug": "not a slug!"}, "slug", None),
        ({"name": "Acme Two", "slug": "x" * 64}, "slug", "Ensure this value has at most 63 characters (it has 64)."),
        ({"name": "!!!", "slug": ""}, "slug", "Choose a slug: the name has no letters or digits to make one from."),
        ({"name": "Acme Two", "slug": "acme"}, "slug", "A workspace with this slug already exists."),
        ({"name": "acme research", "slug": "acme2"}, "name", "A workspace with this name already exists."),
    ],
)
def test_bad_workspace_input_is_refused_beside_the_field_and_creates_nothing(client, root, acme, data, field, message):
    client.force_login(root)
    before = (Tenant.objects.count(), AuditEvent.objects.with_scopes_disabled().count())
    response = client.post("/welcome/", data)
    assert response.status_code == 400
    errors = field_errors(response.text, field)
    if message is None:
        assert errors == ["Enter a valid “slug” consisting of letters, numbers, underscores or hyphens."]
    else:
        assert errors == [message]
    assert (Tenant.objects.count(), AuditEvent.objects.with_scopes_disabled().count()) == before
    assert not Membership.objects.with_scopes_disabled().filter(user=root).exists()


def test_someone_in_no_workspace_who_is_not_a_superuser_is_told_to_ask_for_an_invitation(client, loner):
    page = sign_in(client, "loner")
    assert page.redirect_chain == [("/welcome/", 302)] and page.status_code == 200
    assert "You are not in a workspace yet" in page.text
    assert "Ask an admin of your team's workspace to invite you" in page.text
    assert 'name="slug"' not in page.text
    response = client.post("/welcome/", {"name": "Mine", "slug": "mine"})
    assert response.status_code == 403 and "Only a superuser can create workspaces." in response.text
    assert not Tenant.objects.filter(slug="mine").exists()


def test_every_page_sends_someone_in_no_workspace_to_the_welcome_page(client, loner):
    client.force_login(loner)
    for url in ("/", "/policies/", "/runs/", "/violations/", "/audit/", "/settings/members/", "/settings/secrets/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"] == "/welcome/", url


def test_a_superuser_with_a_workspace_may_create_another_and_switch_to_it(client, root, acme):
    from tenants import services
    from tenants.audit import Actor

    services.membership_set(tenant=acme, user=root, role=Role.VIEWER, actor=Actor.system("tests"))
    client.force_login(root)
    assert 'href="/welcome/">New workspace</a>' in client.get("/").text
    page = client.get("/welcome/")
    assert page.status_code == 200 and '<h1 id="workspace-heading">New workspace</h1>' in page.text
    client.post("/welcome/", {"name": "Second", "slug": "second"})
    overview = client.get("/")
    assert "selected>Second · admin</option>" in overview.text


def test_a_member_who_is_not_a_superuser_cannot_create_workspaces(client, alice):
    client.force_login(alice)
    assert 'href="/welcome/"' not in client.get("/").text
    assert client.get("/welcome/").status_code == 403
    assert client.post("/welcome/", {"name": "Side", "slug": "side"}).status_code == 403
    assert not Tenant.objects.filter(slug="side").exists()


def test_the_welcome_page_needs_sign_in(client, db):
    response = client.get("/welcome/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_there_is_no_django_admin(client, root):
    # Everything is done from the dashboard and the commands; Django's admin is not installed.
    client.force_login(root)
    assert client.get("/admin/").status_code == 404
