"""`make prod-local` starts without SECRET_KEY and GOVERNANCE_SECRETS_KEY: it says so and makes local keys,
kept for the next run, instead of stopping on the settings' refusal."""

import http.client
import importlib.util
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("prod_local", ROOT / "deploy" / "prod_local.py")
prod_local = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prod_local)


def test_missing_keys_are_made_once_kept_private_and_reused(tmp_path):
    keys_file = tmp_path / "var" / "prod-local-keys.env"
    first: dict = {}
    assert prod_local.local_keys(first, keys_file) == ["SECRET_KEY", "GOVERNANCE_SECRETS_KEY"]
    assert len(first["SECRET_KEY"]) >= 50 and len(first["GOVERNANCE_SECRETS_KEY"]) >= 32
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600

    again: dict = {}
    prod_local.local_keys(again, keys_file)
    assert again == first


def test_keys_set_in_the_environment_win_and_are_not_written(tmp_path):
    keys_file = tmp_path / "prod-local-keys.env"
    env = {"SECRET_KEY": "mine-" + "s" * 50, "GOVERNANCE_SECRETS_KEY": "mine-" + "g" * 40}
    assert prod_local.local_keys(env, keys_file) == []
    assert env["SECRET_KEY"] == "mine-" + "s" * 50
    assert not keys_file.exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.topology
@pytest.mark.skipif(not os.environ.get("CELERY_BROKER_URL"), reason="needs CELERY_BROKER_URL (Redis)")
def test_prod_local_without_keys_starts_and_says_where_its_keys_are(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("prod-local runs on PostgreSQL")
    db = settings.DATABASES["default"]
    server = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"gr_prod_local_keys_{uuid.uuid4().hex[:8]}"
    port = _free_port()
    keys_file = tmp_path / "keys.env"
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY", "DEBUG")}
    env.update(DATABASE_URL=f"{server}/{name}", STATIC_ROOT=str(tmp_path / "static"), LOG_LEVEL="WARNING")
    env.pop("DATABASE_REPLICA_URL", None)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log_path = tmp_path / "prod-local.log"
    cmd = [sys.executable, "deploy/prod_local.py", "--port", str(port), "--web-workers", "1", "--threads", "2"]
    cmd += ["--worker-concurrency", "1", "--keys-file", str(keys_file)]
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while "ready http://" not in log_path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("prod-local did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.5)
        output = log_path.read_text()
        assert "Traceback" not in output
        assert (
            f"SECRET_KEY and GOVERNANCE_SECRETS_KEY not set: using throwaway local keys kept in {keys_file} "
            "(set them in the environment to use your own)"
        ) in output
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
