"""`make prod-local`: the deployed topology on this machine, without containers.

    DATABASE_URL=postgres://… CELERY_BROKER_URL=redis://… python deploy/prod_local.py [--port 8000]

What deploy/compose.yaml runs, as local processes: gunicorn (several gthread workers, DEBUG off),
one Celery worker and Celery beat, against the PostgreSQL and Redis given in the environment.
It creates the database when it is missing, migrates it and collects the static files (both can be
skipped), starts the three processes, waits until /readyz answers 200 (primary and broker
reachable) and prints one line, "ready http://HOST:PORT/". It stops everything on SIGINT/SIGTERM,
and stops everything with exit status 1 when one of the processes dies. tests/test_topology.py
starts it exactly so and sends reports through it.

Keys: SECRET_KEY and GOVERNANCE_SECRETS_KEY from the environment when set. Otherwise it makes
throwaway ones, says so, and keeps them in var/prod-local-keys.env (mode 0600) for the next run, so
the tenant secrets stored in the local database stay readable and sessions survive a restart. A
real deployment sets its own (docs/deploy.md); these never leave this machine.
"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


KEYS = ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY")


def local_keys(env: dict, keys_file: Path) -> list[str]:
    """Fill in the keys the environment lacks from keys_file, making and saving them there if new.

    Returns the names it took from the file or made, for the one line that says so."""
    saved: dict[str, str] = {}
    if keys_file.is_file():
        for line in keys_file.read_text(encoding="utf-8").splitlines():
            name, _, value = line.partition("=")
            if name in KEYS and value:
                saved[name] = value
    taken = []
    for name in KEYS:
        if env.get(name, "").strip():
            continue
        if name not in saved:
            saved[name] = secrets.token_urlsafe(50 if name == "SECRET_KEY" else 32)
        env[name] = saved[name]
        taken.append(name)
    if taken:
        keys_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(keys_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("".join(f"{name}={value}\n" for name, value in saved.items()))
    return taken


def _env(keys_file: Path) -> dict:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.setdefault("DEBUG", "0")
    env.setdefault("STATIC_ROOT", str(ROOT / "var" / "static"))
    env.setdefault("PYTHONPATH", str(ROOT))
    if not env.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        raise SystemExit("prod-local needs DATABASE_URL=postgres://… (several processes share one database)")
    if not env.get("CELERY_BROKER_URL"):
        raise SystemExit("prod-local needs CELERY_BROKER_URL=redis://… (the web nodes queue background judgements)")
    taken = local_keys(env, keys_file)
    if taken:
        print(
            f"{' and '.join(taken)} not set: using throwaway local keys kept in {keys_file} "
            "(set them in the environment to use your own)",
            flush=True,
        )
    return env


def ensure_database(url: str) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres", query=""))
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}", flush=True)


def commands(args) -> dict[str, list[str]]:
    return {
        "web": [
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"{args.host}:{args.port}",
            "--workers",
            str(args.web_workers),
            "--worker-class",
            "gthread",
            "--threads",
            str(args.threads),
            "--keep-alive",
            "30",
            "--graceful-timeout",
            "20",
            "--log-level",
            "warning",
            "--preload",
        ],
        "worker": [
            str(BIN / "celery"),
            "-A",
            "config.celery:app",
            "worker",
            "--concurrency",
            str(args.worker_concurrency),
            "--loglevel",
            "warning",
            "--hostname",
            f"worker-{args.port}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        "beat": [
            str(BIN / "celery"),
            "-A",
            "config.celery:app",
            "beat",
            "--loglevel",
            "warning",
            "--schedule",
            str(ROOT / "var" / f"celerybeat-schedule-{args.port}"),
        ],
    }


def _ready(host: str, port: int) -> bool:
    try:
        conn = http.client.HTTPConnection(host, port, timeout=3)
        conn.request("GET", "/readyz")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def stop(procs: dict[str, subprocess.Popen]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 25
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "3")))
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--no-migrate", action="store_true", help="the database is already migrated")
    parser.add_argument("--no-collectstatic", action="store_true")
    parser.add_argument(
        "--keys-file",
        type=Path,
        default=ROOT / "var" / "prod-local-keys.env",
        help="where throwaway keys are kept when SECRET_KEY / GOVERNANCE_SECRETS_KEY are not set",
    )
    args = parser.parse_args()

    env = _env(args.keys_file)
    (ROOT / "var").mkdir(exist_ok=True)
    if not args.no_migrate:
        ensure_database(env["DATABASE_URL"])
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    if not args.no_collectstatic:
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
        )

    procs: dict[str, subprocess.Popen] = {}
    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        for name, cmd in commands(args).items():
            procs[name] = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
        deadline = time.monotonic() + 60
        while not _ready(args.host, args.port):
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead or stopping or time.monotonic() > deadline:
                raise SystemExit(f"not ready: {', '.join(dead) or 'timed out'} ")
            time.sleep(0.3)
        print(
            f"ready http://{args.host}:{args.port}/ (gunicorn x{args.web_workers}, celery worker "
            f"x{args.worker_concurrency}, beat)",
            flush=True,
        )
        while not stopping:
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead:
                print(f"{', '.join(dead)} exited; stopping the rest", file=sys.stderr, flush=True)
                stop(procs)
                sys.exit(1)
            time.sleep(0.5)
    finally:
        stop(procs)


if __name__ == "__main__":
    main()
