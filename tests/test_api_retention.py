"""GET/PUT /api/v1/settings/retention/ and Settings > Retention: the tenant's two retention periods."""

import pytest
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from tenants import services
from tenants.audit import Actor
from tenants.models import AuditEvent, KeyScope
from tests.api_support import row_counts

pytestmark = pytest.mark.django_db
URL = "/api/v1/settings/retention/"
PAGE = "/settings/retention/"


def _client(tenant, scope):
    _, raw = services.api_key_create(tenant=tenant, name=f"{scope} key", actor=Actor.system("tests"), scope=scope)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_the_default_keeps_everything(api, acme):
    assert api.get(URL).json() == {"retention_days": None, "audit_retention_days": None}


def test_an_update_is_saved_and_audited(api, acme):
    response = api.put(URL, {"retention_days": 30, "audit_retention_days": 365}, format="json")

    assert response.status_code == 200
    assert response.json() == {"retention_days": 30, "audit_retention_days": 365}
    acme.refresh_from_db()
    assert (acme.retention_days, acme.audit_retention_days) == (30, 365)
    with scopes_disabled():
        event = AuditEvent.objects.filter(tenant=acme, action="tenants.tenant.retention_changed").get()
    assert event.before == {"retention_days": None, "audit_retention_days": None}
    assert event.after == {"retention_days": 30, "audit_retention_days": 365}
    # Null goes back to keeping everything.
    assert api.put(URL, {"retention_days": None, "audit_retention_days": 365}, format="json").status_code == 200
    assert api.get(URL).json() == {"retention_days": None, "audit_retention_days": 365}


@pytest.mark.parametrize(
    "body,field",
    [
        ({"retention_days": 0, "audit_retention_days": None}, "retention_days"),
        ({"retention_days": -5, "audit_retention_days": None}, "retention_days"),
        ({"retention_days": "30", "audit_retention_days": None}, "retention_days"),
        ({"retention_days": 1.5, "audit_retention_days": None}, "retention_days"),
        ({"retention_days": True, "audit_retention_days": None}, "retention_days"),
        ({"retention_days": 10**9, "audit_retention_days": None}, "retention_days"),
        ({"retention_days": 30, "audit_retention_days": 0}, "audit_retention_days"),
        ({"retention_days": 30, "audit_retention_days": "forever"}, "audit_retention_days"),
        ({"retention_days": 30}, "audit_retention_days"),
        ({"audit_retention_days": 30}, "retention_days"),
        ({"retention_days": 30, "audit_retention_days": 30, "retention": 1}, "retention"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(api, acme, body, field):
    before = row_counts()

    response = api.put(URL, body, format="json")

    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert row_counts() == before
    acme.refresh_from_db()
    assert (acme.retention_days, acme.audit_retention_days) == (None, None)


@pytest.mark.parametrize("scope", [KeyScope.AGENT, KeyScope.READ])
def test_only_an_admin_key_may_change_it(acme, scope):
    client = _client(acme, scope)

    response = client.put(URL, {"retention_days": 1, "audit_retention_days": 1}, format="json")

    assert response.status_code == 403
    acme.refresh_from_db()
    assert acme.retention_days is None


def test_a_read_key_may_read_it(acme):
    assert _client(acme, KeyScope.READ).get(URL).status_code == 200


def test_each_tenant_sees_and_sets_only_its_own(api, other_api, acme, globex):
    api.put(URL, {"retention_days": 7, "audit_retention_days": None}, format="json")

    assert other_api.get(URL).json() == {"retention_days": None, "audit_retention_days": None}
    other_api.put(URL, {"retention_days": 90, "audit_retention_days": 90}, format="json")
    acme.refresh_from_db()
    globex.refresh_from_db()
    assert (acme.retention_days, acme.audit_retention_days) == (7, None)
    assert (globex.retention_days, globex.audit_retention_days) == (90, 90)


def test_without_a_key_it_is_a_401(client, acme):
    assert APIClient().get(URL).status_code == 401


def test_it_is_in_the_schema(api):
    schema = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    assert {"get", "put"} <= set(schema["paths"][URL])


# --- The settings page ---------------------------------------------------------------------------


def test_an_admin_sees_and_saves_both_values(client, alice, acme):
    client.force_login(alice)
    page = client.get(PAGE)
    assert page.status_code == 200
    assert b'name="retention_days"' in page.content and b'name="audit_retention_days"' in page.content

    response = client.post(PAGE, {"retention_days": "30", "audit_retention_days": ""})

    assert response.status_code == 302
    acme.refresh_from_db()
    assert (acme.retention_days, acme.audit_retention_days) == (30, None)
    assert b'value="30"' in client.get(PAGE).content


def test_a_bad_value_is_shown_on_the_field_and_saves_nothing(client, alice, acme):
    client.force_login(alice)

    response = client.post(PAGE, {"retention_days": "0", "audit_retention_days": "abc"})

    assert response.status_code == 400
    form = response.context["form"]
    assert set(form.errors) == {"retention_days", "audit_retention_days"}
    acme.refresh_from_db()
    assert acme.retention_days is None


def test_the_htmx_save_answers_with_the_fragment(client, alice, acme):
    client.force_login(alice)

    response = client.post(PAGE, {"retention_days": "14", "audit_retention_days": "400"}, HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    assert b"<html" not in response.content and b"Saved" in response.content
    acme.refresh_from_db()
    assert (acme.retention_days, acme.audit_retention_days) == (14, 400)


@pytest.mark.parametrize("user", ["bob", "dave"])
def test_only_admins_may_open_it(client, request, acme, user):
    client.force_login(request.getfixturevalue(user))
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, {"retention_days": "1", "audit_retention_days": "1"}).status_code == 403
    acme.refresh_from_db()
    assert acme.retention_days is None


def test_an_admin_of_another_tenant_changes_only_their_own(client, charlie, acme, globex):
    client.force_login(charlie)
    client.post(PAGE, {"retention_days": "3", "audit_retention_days": ""})
    acme.refresh_from_db()
    globex.refresh_from_db()
    assert acme.retention_days is None and globex.retention_days == 3
