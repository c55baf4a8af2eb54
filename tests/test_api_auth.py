"""Bearer API keys: no key, a wrong key or a revoked key is a 401 on every endpoint.

Also the endpoints that need no key: /healthz, the OpenAPI schema and its docs page.
"""

import re

import pytest
from api_support import create_policy, row_counts, start_run
from django.db import connection
from django_scopes import scopes_disabled
from rest_framework.test import APIClient

from tenants import services as tenant_services
from tenants.audit import Actor
from tenants.models import ApiKey

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    ("get", "/api/v1/ping/"),
    ("get", "/api/v1/policies/"),
    ("post", "/api/v1/policies/"),
    ("get", "/api/v1/policies/1/"),
    ("put", "/api/v1/policies/1/"),
    ("patch", "/api/v1/policies/1/"),
    ("delete", "/api/v1/policies/1/"),
    ("get", "/api/v1/runs/"),
    ("post", "/api/v1/runs/"),
    ("get", "/api/v1/runs/1/"),
    ("post", "/api/v1/runs/1/grounding/"),
    ("post", "/api/v1/runs/1/spans/"),
    ("post", "/api/v1/runs/1/complete/"),
    ("get", "/api/v1/evaluations/"),
    ("get", "/api/v1/evaluations/export?format=csv"),
    ("get", "/api/v1/audit-log/"),
    ("get", "/api/v1/audit-log/export?format=jsonl"),
    ("get", "/api/v1/secrets/"),
    ("put", "/api/v1/secrets/OPENAI_API_KEY/"),
    ("delete", "/api/v1/secrets/OPENAI_API_KEY/"),
    ("post", "/api/v1/grounding/decide/"),
]
BODY = {"agent_name": "research-agent", "name": "x", "category": "grounding", "value": "v", "kind": "tool"}


def _client(authorization: str | None) -> APIClient:
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    return client


def _assert_refused(client, method, path):
    before = row_counts()
    response = getattr(client, method)(path, BODY, format="json")
    assert response.status_code == 401, (method, path, response.status_code)
    assert "detail" in response.json()
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert row_counts() == before


@pytest.mark.parametrize("method, path", ENDPOINTS)
def test_no_key_is_a_401(acme, method, path):
    _assert_refused(_client(None), method, path)


@pytest.mark.parametrize("method, path", ENDPOINTS)
def test_a_wrong_key_is_a_401(acme_key, method, path):
    _, raw = acme_key
    _assert_refused(_client(f"Bearer {raw[:-1]}x" if not raw.endswith("x") else f"Bearer {raw[:-1]}y"), method, path)


@pytest.mark.parametrize("method, path", ENDPOINTS)
def test_a_revoked_key_is_a_401(acme, acme_key, method, path):
    client, raw = acme_key
    assert client.get("/api/v1/ping/").status_code == 200
    with scopes_disabled():
        key = ApiKey.objects.get(key_hash=tenant_services.hash_api_key(raw))
    tenant_services.api_key_revoke(key=key, actor=Actor.system("tests"))

    _assert_refused(client, method, path)


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer",
        "Bearer ",
        "Bearer one two",
        "bearer gr_not-a-real-key",
        "Token gr_not-a-real-key",
        "Basic YWxpY2U6cGFzc3dvcmQ=",
        "gr_not-a-real-key",
        "Bearer gr_ü-nicode",
        "Bearer \x7f",
    ],
)
def test_malformed_authorization_headers_are_a_401(acme, authorization):
    response = _client(authorization).get("/api/v1/policies/")

    assert response.status_code == 401
    assert "detail" in response.json()


def test_a_valid_key_speaks_for_its_tenant(api, acme):
    response = api.get("/api/v1/ping/")

    assert response.status_code == 200
    assert response.json() == {"tenant": "acme"}


def test_the_scheme_is_case_insensitive(acme_key):
    _, raw = acme_key

    assert _client(f"bearer {raw}").get("/api/v1/ping/").status_code == 200


def test_using_a_key_records_when_it_was_last_used(acme_key):
    client, raw = acme_key
    with scopes_disabled():
        assert ApiKey.objects.get(key_hash=tenant_services.hash_api_key(raw)).last_used_at is None

    client.get("/api/v1/ping/")

    with scopes_disabled():
        assert ApiKey.objects.get(key_hash=tenant_services.hash_api_key(raw)).last_used_at is not None


def test_keys_are_stored_as_hashes_with_a_visible_prefix(acme_key):
    _, raw = acme_key

    with scopes_disabled():
        key = ApiKey.objects.get(key_hash=tenant_services.hash_api_key(raw))
    assert raw.startswith("gr_") and len(raw) > 40
    assert key.prefix == raw[:10]
    assert raw not in (key.key_hash, key.prefix, key.name)


def test_revoking_one_key_leaves_the_tenants_other_keys_working(acme, acme_key):
    client, raw = acme_key
    other_key, other_raw = tenant_services.api_key_create(tenant=acme, name="second", actor=Actor.system("tests"))
    tenant_services.api_key_revoke(key=other_key, actor=Actor.system("tests"))

    assert client.get("/api/v1/ping/").status_code == 200
    assert _client(f"Bearer {other_raw}").get("/api/v1/ping/").status_code == 401


def test_a_session_login_is_not_an_api_key(client, alice):
    # The dashboard's session does not open the API: agents and scripts use keys.
    client.force_login(alice)

    assert client.get("/api/v1/policies/").status_code == 401


def test_runs_remember_the_key_that_started_them(api, acme_key):
    _, raw = acme_key
    run_id = start_run(api)

    from governance.models import Run

    with scopes_disabled():
        assert Run.objects.get(pk=run_id).api_key.key_hash == tenant_services.hash_api_key(raw)


# --- Endpoints without a key ---------------------------------------------------------------


def test_healthz_reports_the_database_without_a_key(db):
    response = APIClient().get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_healthz_only_answers_get(db):
    assert APIClient().post("/healthz").status_code == 405


def test_the_openapi_schema_is_public_and_openapi_3(db):
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Groundrule API"
    for path in (
        "/api/v1/policies/",
        "/api/v1/policies/{id}/",
        "/api/v1/runs/",
        "/api/v1/runs/{id}/grounding/",
        "/api/v1/runs/{id}/spans/",
        "/api/v1/runs/{id}/complete/",
        "/api/v1/evaluations/",
        "/api/v1/evaluations/export",
        "/api/v1/audit-log/",
        "/api/v1/secrets/",
        "/api/v1/secrets/{name}/",
    ):
        assert path in schema["paths"], path


def test_the_docs_page_renders(db):
    response = APIClient().get("/api/v1/docs/")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_the_docs_page_has_no_inline_script_the_csp_would_block(db):
    page = APIClient().get("/api/v1/docs/")
    assert "script-src 'self'" in page["Content-Security-Policy"]
    scripts = re.findall(r"<script([^>]*)>", page.text)
    assert scripts and all("src=" in attrs for attrs in scripts), scripts
    (init,) = [src for src in re.findall(r'<script src="([^"]+)"', page.text) if "script" in src.split("?")[-1]]
    script = APIClient().get(init.replace("&amp;", "&"))
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/v1/schema/" in script.content.decode()


def test_every_response_carries_a_request_id(api, acme):
    create_policy(api)

    assert len(api.get("/api/v1/policies/")["X-Request-ID"]) == 32
    assert APIClient().get("/api/v1/policies/")["X-Request-ID"]
    assert APIClient().get("/healthz")["X-Request-ID"]


def test_the_key_read_on_every_request_is_what_the_orm_reads(acme):
    """tenants/auth.py reads the key and its tenant in one prepared statement on PostgreSQL: the
    same values, JSON columns decoded and datetimes aware, as the ORM's select_related query."""
    from tenants.auth import _key_with_tenant
    from tenants.models import hash_api_key

    actor = Actor.system("tests")
    key, raw = tenant_services.api_key_create(
        tenant=acme, name="support", actor=actor, scope="agent", agents=["support-*", "qa"], expires_in_days=3
    )
    read = _key_with_tenant(hash_api_key(raw))
    with scopes_disabled():
        orm = ApiKey.objects.select_related("tenant").get(pk=key.pk)

    def columns(obj):
        return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}

    assert columns(read) == columns(orm) and columns(read.tenant) == columns(orm.tenant)
    assert read.agents == ["support-*", "qa"] and read.expires_at.tzinfo is not None
    assert not read._state.adding and read.tenant is not None
    assert _key_with_tenant(hash_api_key(raw + "x")) is None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_prepared_statements_can_be_turned_off_for_a_pooler(settings):
    """Behind a pooler that cannot keep a connection's prepared statements (docs/deploy.md),
    DATABASE_PREPARED_STATEMENTS=0 runs the same statements without preparing any."""
    tenant = tenant_services.tenant_create(slug="pooled", name="Pooled", actor=Actor.system("tests"))
    _, raw = tenant_services.api_key_create(tenant=tenant, name="agent", actor=Actor.system("tests"))
    client = APIClient(HTTP_AUTHORIZATION=f"Bearer {raw}")

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            return cursor.fetchone()[0]

    connection.close()  # a new session: nothing prepared yet
    settings.DATABASE_PREPARED_STATEMENTS = False
    assert client.get("/api/v1/ping/").status_code == 200
    assert start_run(client) > 0
    assert prepared() == 0

    settings.DATABASE_PREPARED_STATEMENTS = True
    assert client.get("/api/v1/ping/").status_code == 200
    assert prepared() >= 1
