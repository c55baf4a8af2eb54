"""The fixed cast: tenant acme (alice admin, bob reviewer, dave viewer) and tenant globex
(charlie admin, the outsider). Each tenant has an API client authenticated with its own key."""

from __future__ import annotations

import pytest

try:  # Django-free test modules (engine, verifier, judge providers) also run with `-p no:django`.
    from django.conf import settings as django_settings
    from django.contrib.auth import get_user_model
    from django_scopes import scope, scopes_disabled
    from rest_framework.test import APIClient

    from policies import services as policy_services
    from policies.selectors import clear_policy_cache
    from tenants import services as tenant_services
    from tenants.audit import Actor
    from tenants.models import Role

    SYSTEM = Actor.system("tests")
    DJANGO = True
except Exception:  # ImproperlyConfigured without the pytest-django plugin
    DJANGO = False


@pytest.fixture(autouse=True)
def _fresh_policy_cache():
    # Test databases roll back, so a tenant id can come back with a generation the cache has seen,
    # and a run id with another tenant or agent than the process remembers (report_write.known_run).
    if not DJANGO:
        yield
        return
    from governance.report_write import forget_known_runs

    clear_policy_cache()
    forget_known_runs()
    yield
    clear_policy_cache()
    forget_known_runs()


def _user(username: str):
    return get_user_model().objects.create_user(
        username=username, email=f"{username}@example.com", password="correct-horse-battery"
    )


@pytest.fixture
def acme(db):
    return tenant_services.tenant_create(slug="acme", name="Acme Research", actor=SYSTEM)


@pytest.fixture
def globex(db):
    return tenant_services.tenant_create(slug="globex", name="Globex", actor=SYSTEM)


@pytest.fixture
def alice(acme):
    user = _user("alice")
    tenant_services.membership_set(tenant=acme, user=user, role=Role.ADMIN, actor=SYSTEM)
    return user


@pytest.fixture
def bob(acme):
    user = _user("bob")
    tenant_services.membership_set(tenant=acme, user=user, role=Role.REVIEWER, actor=SYSTEM)
    return user


@pytest.fixture
def dave(acme):
    user = _user("dave")
    tenant_services.membership_set(tenant=acme, user=user, role=Role.VIEWER, actor=SYSTEM)
    return user


@pytest.fixture
def charlie(globex):
    user = _user("charlie")
    tenant_services.membership_set(tenant=globex, user=user, role=Role.ADMIN, actor=SYSTEM)
    return user


def _api_client(tenant) -> tuple[APIClient, str]:
    # Full rights, as the tests of each endpoint need; the scopes have their own tests.
    _, raw = tenant_services.api_key_create(tenant=tenant, name="tests", actor=SYSTEM, scope="admin")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client, raw


@pytest.fixture
def acme_key(acme):
    return _api_client(acme)


@pytest.fixture
def api(acme_key):
    """An API client for tenant acme."""
    return acme_key[0]


@pytest.fixture
def other_api(globex):
    """An API client for tenant globex: the outsider."""
    return _api_client(globex)[0]


@pytest.fixture
def make_policy(acme):
    def make(
        name="Strict Research Grounding",
        rules=None,
        agents=(),
        tenant=None,
        enabled=True,
        category="grounding",
        mode="enforce",
    ):
        tenant = tenant or acme
        with scope(tenant=tenant):
            return policy_services.policy_create(
                tenant=tenant,
                actor=SYSTEM,
                name=name,
                category=category,
                rules=rules or {},
                scope={"agents": list(agents)},
                enabled=enabled,
                mode=mode,
            )

    return make


@pytest.fixture
def unscoped():
    """For assertions on rows across tenants (the escape hatch admin commands use)."""
    with scopes_disabled():
        yield


@pytest.fixture(autouse=True)
def _celery_eager(request):
    """Tasks run in-process unless a test asks for the real worker (marker `celery_worker`)."""
    if not DJANGO:
        yield
        return
    from config.celery import app

    eager = "celery_worker" not in request.keywords
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = eager
    yield
    app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _replica_reads(request):
    """Reads go to the replica (when DATABASE_REPLICA_URL configures one) only in tests marked
    `replica`: they commit their rows (transaction=True) so the replica's connection sees them,
    where every other test's rows live in a transaction only the primary's connection sees."""
    if not DJANGO:
        yield
        return
    previous = django_settings.REPLICA_READS
    django_settings.REPLICA_READS = "replica" in request.keywords
    yield
    django_settings.REPLICA_READS = previous
