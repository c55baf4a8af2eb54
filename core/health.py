"""Liveness (/healthz) and readiness (/readyz) for load balancers and orchestrators.

/healthz answers while the process and its database answer (kept as it was: clients pin it).
/readyz says whether this node should take traffic: the primary, the read replica when one is
configured (reachable and not lagging more than REPLICA_MAX_LAG_SECONDS) and the Celery broker
when one is configured. Each check is reported by name, so an operator sees which one failed;
a failure is a 503 with the exception's class name, never its message (it may hold a password).
A shared cache (CACHE_URL) is reported too, as "degraded" when it does not answer, without failing
readiness: every use of it fails open (core/soft_cache.py), so the node still answers, and taking
every node out of the balancer over a shared Redis would turn a slower API into no API.
"""

import time

from django.conf import settings
from django.db import connection, connections
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from kombu import Connection as BrokerConnection

from core.routing import REPLICA, replica_configured
from core.soft_cache import check_cache

# How far a streaming replica is behind: zero when it has replayed everything it received (a quiet
# primary would otherwise look "late" by the time since its last write); on a server that is not in
# recovery (a primary, or the second database a test stands up) it is zero too.
REPLICA_LAG_SQL = """
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0.0
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
    ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0.0)
END, pg_is_in_recovery()
"""
BROKER_TIMEOUT_SECONDS = 2.0

# Figures an app above core adds to /readyz (name -> check returning a dict), registered from its
# AppConfig.ready(): core imports no app. They report; one that raises fails readiness like any check.
EXTRA_CHECKS: dict = {}


def register_check(name: str, check) -> None:
    EXTRA_CHECKS[name] = check


@require_safe  # GET, and HEAD for load balancers that probe with it
def healthz(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not healthy", never a 500 page
        return JsonResponse({"status": "error", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


def _timed(check) -> dict:
    started = time.perf_counter()
    try:
        result = {"status": "ok", **check()}
    except Exception as exc:
        result = {"status": "error", "error": type(exc).__name__}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def check_primary() -> dict:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {}


def check_replica() -> dict:
    replica = connections[REPLICA]
    with replica.cursor() as cursor:
        if replica.vendor == "postgresql":
            cursor.execute(REPLICA_LAG_SQL)
            lag, in_recovery = cursor.fetchone()
        else:
            cursor.execute("SELECT 1")
            cursor.fetchone()
            lag, in_recovery = 0.0, False
    lag = float(lag)
    limit = settings.REPLICA_MAX_LAG_SECONDS
    result = {"lag_seconds": round(lag, 3), "max_lag_seconds": limit, "in_recovery": bool(in_recovery)}
    if limit is not None and not lag < limit:
        result.update(status="error", error="ReplicaLagging")
    return result


def check_broker() -> dict:
    with BrokerConnection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
        broker.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_SECONDS)
    return {}


@never_cache
@require_safe  # GET, and HEAD for load balancers that probe with it
def readyz(request):
    checks = {"primary": _timed(check_primary)}
    if replica_configured():
        checks["replica"] = _timed(check_replica)
    if settings.CELERY_BROKER_URL:
        checks["broker"] = _timed(check_broker)
    if "LocMemCache" not in settings.CACHES["default"]["BACKEND"]:
        checks["cache"] = _timed(check_cache)
        if checks["cache"]["status"] == "error":
            checks["cache"]["status"] = "degraded"
    for name, check in EXTRA_CHECKS.items():
        checks[name] = _timed(check)
    ready = all(c["status"] in ("ok", "degraded") for c in checks.values())
    return JsonResponse({"status": "ok" if ready else "error", "checks": checks}, status=200 if ready else 503)
