"""A real Celery worker process for the tests that need one (Redis broker, the test's PostgreSQL)."""

import os
import subprocess
import sys
import uuid
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection

from config.celery import app

ROOT = Path(__file__).resolve().parent.parent

NEEDS_BROKER = [
    pytest.mark.celery_worker,
    pytest.mark.skipif(not os.environ.get("CELERY_BROKER_URL"), reason="needs CELERY_BROKER_URL (Redis)"),
]


def shared_database_url() -> str:
    """The test database's URL, for another process: only PostgreSQL can be shared that way."""
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the worker process needs a database it can share: PostgreSQL")
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def broker_at(url: str | None = None, *, key_prefix: str | None = None):
    """This process sends its tasks to `url` (a closed port: the broker is down), or under its own
    `key_prefix` (a worker started with CELERY_BROKER_KEY_PREFIX reads only those), until the block ends.

    The write URL, because Celery prefers CELERY_BROKER_URL from the environment over its settings
    for the read URL; the cached connection pools are dropped so the next send dials again."""
    before = app.conf.broker_write_url, app.conf.broker_transport_options

    def redial(to, options):
        app.conf.broker_write_url, app.conf.broker_transport_options = to, options
        app._pool = None
        app.amqp._producer_pool = None

    options = {**before[1], "global_keyprefix": key_prefix} if key_prefix else before[1]
    redial(url or before[0], options)
    try:
        yield
    finally:
        redial(*before)


@contextmanager
def celery_worker(**extra_env):
    """One solo-pool worker on the test's database and broker, stopped on exit.

    Its queue is this test's own (a key prefix, unless the caller chose one and sends under it with
    `broker_at`): under xdist another process's worker, on another test database, would otherwise
    take this test's tasks, and the work it finds missing is never done here."""
    own_prefix = None
    if "CELERY_BROKER_KEY_PREFIX" not in extra_env:
        own_prefix = f"groundrule-test-{uuid.uuid4().hex[:8]}:"
        extra_env = {**extra_env, "CELERY_BROKER_KEY_PREFIX": own_prefix}
    env = {
        **os.environ,
        "DATABASE_URL": shared_database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        **extra_env,
    }
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--pool",
        "solo",
        "--loglevel",
        "warning",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
    ]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with broker_at(key_prefix=own_prefix) if own_prefix else nullcontext():
            yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if own_prefix:
            broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
            for key in broker.scan_iter(match=f"{own_prefix}*"):
                broker.delete(key)
            broker.close()
