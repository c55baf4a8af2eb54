"""The backup and restore drill of docs/deploy.md, on PostgreSQL: a tenant with a policy, decisions and a
secret is dumped with `pg_dump -Fc`, its database dropped and made again, and `pg_restore` brings it
back. The audit chain still verifies, the same API key still gets decisions (and the audit log goes
on from where it was), and the secret reads with the same GOVERNANCE_SECRETS_KEY and with no other.

Every step is what an operator runs: manage.py commands and gunicorn against a database of the
drill's own (gr_pack_drill_*), never the tests' database.
"""

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings
from django.db import connection
from server_process import free_port

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-drill-0123456789"
READ_SECRET = (
    "from tenants.models import TenantSecret; "
    "print(TenantSecret.objects.with_scopes_disabled().get(name='OPENAI_API_KEY').reveal())"
)

pytestmark = [
    pytest.mark.restore_drill,
    pytest.mark.skipif(
        not (shutil.which("pg_dump") and shutil.which("pg_restore")), reason="needs pg_dump and pg_restore"
    ),
]


def _server_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"


class Drill:
    def __init__(self, tmp_path: Path):
        self.server = _server_url()
        self.name = f"gr_pack_drill_{uuid.uuid4().hex[:10]}"
        self.url = f"{self.server}/{self.name}"
        self.tmp = tmp_path
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_", "CACHE_"))}
        self.env = {
            **env,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "0",
            "DATABASE_URL": self.url,
            "SECRET_KEY": settings.SECRET_KEY,
            "GOVERNANCE_SECRETS_KEY": settings.GOVERNANCE_SECRETS_KEY,
            "LOG_LEVEL": "WARNING",
        }

    def admin_sql(self, sql: str) -> None:
        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as conn:
            conn.execute(sql)

    def manage(self, *args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env or self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        result = self.manage(*args, stdin=stdin)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def serve(self):
        return _Gunicorn(self)


class _Gunicorn:
    def __init__(self, drill: Drill):
        self.drill = drill
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self.log = open(self.drill.tmp / f"gunicorn-{self.port}.log", "w")
        cmd = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{self.port}", "--workers", "1"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.drill.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.drill.tmp / f"gunicorn-{self.port}.log").read_text()
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError("gunicorn did not answer /healthz")

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _create_policy(url: str, key: str, name: str) -> None:
    created = httpx.post(
        f"{url}/api/v1/policies/",
        json={"name": name, "category": "grounding", "rules": {"action_on_violation": "block"}},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text


def _blocked_run(url: str, key: str) -> dict:
    headers = {"Authorization": f"Bearer {key}"}
    started = httpx.post(f"{url}/api/v1/runs/", json={"agent_name": "research-agent"}, headers=headers, timeout=30)
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    reported = httpx.post(
        f"{url}/api/v1/runs/{run_id}/grounding/", json={"grounding_scores": [0.2]}, headers=headers, timeout=30
    )
    assert reported.status_code == 200, reported.text
    return reported.json()["decision"]


def _rows_checked(output: str) -> int:
    match = re.search(r"Audit log of 'acme' intact: (\d+) rows checked\.", output)
    assert match, output
    return int(match.group(1))


def test_a_dump_restored_into_a_dropped_database_verifies_its_audit_chain_and_still_decides(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the restore drill is pg_dump/pg_restore: run the tests with DATABASE_URL=postgres://…")
    drill = Drill(tmp_path)
    dump = tmp_path / "groundrule.dump"
    drill.admin_sql(f'CREATE DATABASE "{drill.name}"')
    try:
        drill.ok("migrate", "--noinput", "-v", "0")
        drill.ok("create_tenant", "acme")
        key = drill.ok("create_api_key", "acme", "--scope", "admin").strip().splitlines()[-1]
        drill.ok("set_secret", "acme", "OPENAI_API_KEY", stdin=SECRET)
        with drill.serve() as server:
            _create_policy(server.url, key, "Drill")
            before = _blocked_run(server.url, key)
        assert before["action"] == "block"
        rows_before = _rows_checked(drill.ok("verify_audit_log", "acme"))
        assert rows_before >= 3

        dumped = subprocess.run(["pg_dump", "-Fc", "-f", str(dump), drill.url], capture_output=True, text=True)
        assert dumped.returncode == 0, dumped.stderr
        drill.admin_sql(f'DROP DATABASE "{drill.name}" WITH (FORCE)')
        drill.admin_sql(f'CREATE DATABASE "{drill.name}"')
        restored = subprocess.run(
            ["pg_restore", "--no-owner", "--exit-on-error", "-d", drill.url, str(dump)], capture_output=True, text=True
        )
        assert restored.returncode == 0, restored.stderr

        assert _rows_checked(drill.ok("verify_audit_log", "acme")) == rows_before
        # Migrating a restored database is a no-op, as an upgrade run twice is.
        assert "No migrations to apply." in drill.ok("migrate", "--noinput")
        with drill.serve() as server:
            after = _blocked_run(server.url, key)
            # An audited change after the restore (the sequences came back with the rows).
            _create_policy(server.url, key, "Written after the restore")
        assert after["action"] == before["action"] == "block"
        assert after["reason"] == before["reason"]
        # The chain goes on from the restored rows: the new event verifies with the old.
        assert _rows_checked(drill.ok("verify_audit_log", "acme")) == rows_before + 1

        assert drill.ok("shell", "--no-imports", "-c", READ_SECRET).strip() == SECRET
        other_key = {**drill.env, "GOVERNANCE_SECRETS_KEY": "not-the-escrowed-key-0123456789"}
        lost = drill.manage("shell", "--no-imports", "-c", READ_SECRET, env=other_key)
        assert lost.returncode != 0 and "SecretUnreadable" in lost.stderr
    finally:
        drill.admin_sql(f'DROP DATABASE IF EXISTS "{drill.name}" WITH (FORCE)')
