"""/readyz: the primary, the replica (reachable, lag under REPLICA_MAX_LAG_SECONDS) and the broker,
each reported by name; 503 when any is not ready. /healthz stays the liveness probe."""

import os

import pytest
from django.db import connections
from rest_framework.test import APIClient

from core.routing import REPLICA, replica_configured

pytestmark = pytest.mark.django_db(databases="__all__")

REDIS = os.environ.get("READYZ_REDIS_URL", "redis://127.0.0.1:6379/8")
NOTHING_LISTENS = "redis://127.0.0.1:1/0"  # port 1: connection refused at once
needs_replica = pytest.mark.skipif(not replica_configured(), reason="needs DATABASE_REPLICA_URL")


def _ready():
    return APIClient().get("/readyz")


def test_ready_with_the_primary_alone(settings):
    settings.CELERY_BROKER_URL = ""

    response = _ready()

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["primary"]["status"] == "ok"
    assert "broker" not in body["checks"]
    assert response["Cache-Control"].startswith("max-age=0")


def test_a_reachable_broker_is_ready(settings):
    settings.CELERY_BROKER_URL = REDIS

    body = _ready().json()

    assert body["checks"]["broker"]["status"] == "ok"


def test_an_unreachable_broker_is_503_naming_the_check(settings):
    settings.CELERY_BROKER_URL = NOTHING_LISTENS

    response = _ready()

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["primary"]["status"] == "ok"
    assert body["checks"]["broker"]["status"] == "error"
    assert body["checks"]["broker"]["error"]  # the exception's class, never its message
    assert "127.0.0.1:1" not in response.content.decode()


def test_readyz_only_answers_get(settings):
    settings.CELERY_BROKER_URL = ""
    assert APIClient().post("/readyz").status_code == 405


def test_both_probes_answer_head_as_load_balancers_send_it(settings):
    settings.CELERY_BROKER_URL = ""
    for path in ("/healthz", "/readyz"):
        response = APIClient().head(path)
        assert response.status_code == 200, path
        assert response.content == b""


def test_healthz_still_answers_with_the_broker_down(settings):
    # Liveness is about this process; a broker outage must not get healthy web nodes restarted.
    settings.CELERY_BROKER_URL = NOTHING_LISTENS
    assert APIClient().get("/healthz").status_code == 200


@needs_replica
def test_the_replica_reports_its_lag(settings):
    settings.CELERY_BROKER_URL = ""
    settings.REPLICA_MAX_LAG_SECONDS = 30.0

    response = _ready()

    assert response.status_code == 200
    replica = response.json()["checks"]["replica"]
    assert replica["status"] == "ok"
    assert replica["lag_seconds"] == 0.0 and replica["max_lag_seconds"] == 30.0


@needs_replica
def test_a_replica_behind_the_limit_is_503(settings):
    settings.CELERY_BROKER_URL = ""
    settings.REPLICA_MAX_LAG_SECONDS = 0.0  # nothing is "under" zero seconds behind

    response = _ready()

    assert response.status_code == 503
    assert response.json()["checks"]["replica"] | {"ms": 0} == {
        "status": "error",
        "error": "ReplicaLagging",
        "lag_seconds": 0.0,
        "max_lag_seconds": 0.0,
        "in_recovery": False,
        "ms": 0,
    }


@needs_replica
def test_an_unreachable_replica_is_503():
    replica = connections[REPLICA]
    port = replica.settings_dict["PORT"]
    replica.close()
    replica.settings_dict["PORT"] = "1"
    try:
        response = _ready()
    finally:
        replica.close()
        replica.settings_dict["PORT"] = port

    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["primary"]["status"] == "ok"
    assert checks["replica"]["status"] == "error"
    assert checks["replica"]["error"] == "OperationalError"


PROBE_OVER_HTTP = """
import django; django.setup()
from django.test import Client
print(Client().get("/healthz").status_code, Client().get("/readyz").status_code)
"""


def test_probes_over_plain_http_are_not_redirected_when_https_is_on():
    # A load balancer probes a node over plain HTTP. A 301 to https:// instead of 200/503 is a
    # success to a Kubernetes probe (200-399): a node that is not ready would stay in rotation.
    import subprocess
    import sys
    from pathlib import Path

    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DEBUG", "DJANGO_SETTINGS_MODULE")},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "0",
        "HTTPS": "1",
        "SECRET_KEY": "s" * 50,
        "GOVERNANCE_SECRETS_KEY": "g" * 40,
        "CELERY_BROKER_URL": NOTHING_LISTENS,  # so /readyz is a 503, and must stay one
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE_OVER_HTTP],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    healthz, readyz = result.stdout.split()[-2:]
    assert healthz != "301"
    assert readyz == "503"
