"""A real server in a child process, on its own file SQLite database, for tests that need true
concurrency (pytest-django's live server shares the test's in-memory database and its one writer).

    with ServerProcess(tmp_path) as server:
        key = server.api_key("agent")
        httpx.get(server.url + "/api/v1/ping/", headers={"Authorization": f"Bearer {key}"})

With ``demo_runs=N`` the database is the demo (`seed_demo --runs N`, tenant "demo") and
``server.demo_key`` is the agent key it printed, as `make run` shows it (tests/test_doc_examples.py).

The database is migrated with the project's settings (so WAL, IMMEDIATE transactions and the busy
timeout of config/settings.py are what is tested), and the server is gunicorn as deployed: two
worker processes of eight threads each, so two processes write to one SQLite file at once.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    def __init__(
        self,
        directory: Path,
        *,
        extra_env: dict | None = None,
        tenant: str = "acme",
        admin: tuple[str, str] | None = None,
        demo_runs: int | None = None,
    ):
        self.db = Path(directory) / "server.sqlite3"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # With demo_runs the database is `manage.py seed_demo --runs N` (tenant "demo", its agent key in
        # demo_key) instead of one empty tenant.
        self.demo_runs = demo_runs
        self.demo_key = ""
        self.tenant = "demo" if demo_runs is not None else tenant
        self.admin = admin  # (email, password): a dashboard login, admin of the tenant
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
        self.env = {
            **env,
            "DATABASE_URL": f"sqlite:///{self.db}",
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            **(extra_env or {}),
        }
        self.proc: subprocess.Popen | None = None

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done.stdout

    def api_key(self, scope: str = "agent") -> str:
        return self.manage("create_api_key", self.tenant, "--scope", scope).strip().splitlines()[-1]

    def __enter__(self) -> ServerProcess:
        self.manage("migrate", "--noinput", "-v", "0")
        if self.demo_runs is None:
            login = ("--admin-email", self.admin[0], "--admin-password", self.admin[1]) if self.admin else ()
            self.manage("create_tenant", self.tenant, *login)
        else:
            self.demo_key = self.manage("seed_demo", "--runs", str(self.demo_runs)).strip().split()[-1]
        # Its request log goes to a file: a pipe nobody reads would fill and stall the server.
        self.log = open(self.db.with_suffix(".log"), "w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "--worker-class",
                "gthread",
                "--threads",
                "8",
                "--access-logfile",
                "-",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.db.with_suffix('.log').read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("server did not start")

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
