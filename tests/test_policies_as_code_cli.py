"""Policies as code end to end: the `groundrule` command (the SDK's, run as `python -m groundrule`
from this checkout) against a live server (gunicorn, tests/server_process.py).

The server runs on PostgreSQL when DATABASE_URL names it (a database of its own, made and dropped
here), else on its own SQLite file. Everything is checked the way a user sees it: exit codes,
what the command prints, files written, and the server's API (policies, versions, audit log).
"""

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from api_support import LENIENT, STRICT
from server_process import ServerProcess
from test_pages_policies import form_data

ROOT = Path(__file__).resolve().parents[1]
ADMIN = ("admin@acme.test", "correct-horse-battery")
PULLED = """name: Lenient RAG
description: ''
category: grounding
mode: enforce
enabled: true
scope:
  agents: []
rules:
  require_source_grounding: false
  min_grounding_score: 0.6
  min_citations: 1
  max_unsupported_claims: 3
  abstention_threshold: null
  action_on_violation: warn
"""


def _postgres_database():
    """A database of the server's own on the PostgreSQL that DATABASE_URL names, or None (SQLite)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None, None
    import psycopg

    base = url.rsplit("/", 1)[0]
    name = f"gr_pac_cli_{os.getpid()}"

    def run(sql: str) -> None:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
            connection.execute(sql)

    run(f'DROP DATABASE IF EXISTS "{name}"')
    run(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}", lambda: run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Live:
    def __init__(self, server: ServerProcess):
        self.server = server
        self.url = server.url
        self.admin_key = server.api_key("admin")
        self.read_key = server.api_key("read")
        self.agent_key = server.api_key("agent")
        server.manage("create_tenant", "globex")
        self.globex_key = server.manage("create_api_key", "globex", "--scope", "admin").strip().splitlines()[-1]

    def api(self, method: str, path: str, key: str | None = None, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or self.admin_key}"}
        return httpx.request(method, f"{self.url}/api/v1/{path}", headers=headers, timeout=60, **kwargs)

    def policies(self, key: str | None = None) -> dict[str, dict]:
        return {p["name"]: p for p in self.api("GET", "policies/?page_size=100", key).json()["results"]}

    def audit(self, action: str) -> list[dict]:
        return self.api("GET", f"audit-log/?action={action}").json()["results"]

    def env(self, key: str | None) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUNDRULE_")}
        # This checkout's SDK, ahead of the one installed in the virtualenv.
        env.update({"PYTHONPATH": str(ROOT / "client"), "GROUNDRULE_URL": self.url})
        if key:
            env["GROUNDRULE_API_KEY"] = key
        return env

    def cli(self, *args: str, key: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "groundrule", *args],
            env=self.env(key or self.admin_key),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    database, drop = _postgres_database()
    extra = {"DATABASE_URL": database} if database else None
    try:
        with ServerProcess(tmp_path_factory.mktemp("pac-server"), extra_env=extra, admin=ADMIN) as server:
            live = Live(server)
            # Three finished runs of support-bot: grounding scores 0.9, 0.65 and 0.5.
            headers = {"Authorization": f"Bearer {live.agent_key}"}
            with httpx.Client(base_url=f"{live.url}/api/v1/", headers=headers, timeout=60) as agent:
                live.runs = []
                for score in (0.9, 0.65, 0.5):
                    run = agent.post("runs/", json={"agent_name": "support-bot"}).json()["id"]
                    agent.post(f"runs/{run}/grounding/", json={"grounding_scores": [score], "citations": ["a"]})
                    agent.post(f"runs/{run}/complete/", json={"output": "Answer"})
                    live.runs.append(run)
            yield live
    finally:
        if drop:
            drop()


@pytest.fixture
def fresh(live):
    """Acme starts with one policy, Lenient RAG (created in the dashboard's way: not managed by code)."""
    assert live.api("POST", "policies/apply/", json={"policies": [], "prune": True}).status_code == 200
    body = {"name": "Lenient RAG", "category": "grounding", "rules": LENIENT, "scope": {"agents": []}}
    created = live.api("POST", "policies/", json=body)
    assert created.status_code == 201, created.text
    return created.json()


def test_pull_edit_plan_apply_and_apply_again(live, fresh, tmp_path):
    pulled = live.cli("policies", "pull", str(tmp_path))
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout == f"Wrote 1 policy file to {tmp_path}.\n"
    file = tmp_path / "lenient-rag.yaml"
    assert file.read_text() == PULLED
    nothing = live.cli("policies", "plan", str(tmp_path))
    assert (nothing.returncode, nothing.stdout) == (0, "Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n")

    file.write_text(PULLED.replace("min_grounding_score: 0.6", "min_grounding_score: 0.7"))
    plan = live.cli("policies", "plan", str(tmp_path))
    assert plan.returncode == 2, plan.stderr
    slow = live.runs[1]
    assert f"~ Lenient RAG: update (v1 → v2)  [{file}]\n    rules.min_grounding_score: 0.6 → 0.7\n" in plan.stdout
    assert "    would have changed 1 of 9 decisions (1 runs): allow → warn 1\n" in plan.stdout
    assert (
        f"      run {slow} mid_execution: allow → warn (Grounding score (0.65) below threshold (0.7))\n" in plan.stdout
    )
    assert "Impact over the last 7 days (3 runs, 3 reports, 9 decisions):" in plan.stdout
    # The decisions the plan says would change are those a replay of the same candidate changes.
    as_json = live.cli("policies", "plan", str(tmp_path), "--json")
    assert as_json.returncode == 2
    import json

    planned = json.loads(as_json.stdout)["policies"][0]
    assert planned["file"] == str(file)
    rules = {**LENIENT, "min_grounding_score": 0.7}
    replay = live.api(
        "POST", "policies/replay/", json={"policy_id": fresh["id"], "policy": {"category": "grounding", "rules": rules}}
    ).json()
    assert [(c["run_id"], c["phase"], c["before"], c["after"]) for c in replay["changed"]] == [
        (e["run_id"], e["phase"], e["before"], e["after"]) for e in planned["impact"]["examples"]
    ]
    assert planned["impact"]["changed_runs"] == replay["changed_runs"] == 1

    applied = live.cli("policies", "apply", str(tmp_path), "--yes")
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.endswith("\nApplied: 0 created, 1 updated, 0 deleted, 0 unchanged.\n")
    policy = live.policies()["Lenient RAG"]
    assert policy["version"] == 2 and policy["rules"]["min_grounding_score"] == 0.7
    versions = [e for e in live.audit("policies.policy.updated") if e["object_id"] == str(fresh["id"])]
    assert len(versions) == 1
    assert versions[0]["after"]["source"] == "apply" and versions[0]["actor"].startswith("api-key:")
    audit_rows = live.api("GET", "audit-log/?page_size=200").json()["results"]

    again = live.cli("policies", "apply", str(tmp_path), "--yes")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Plan: 0 to create, 0 to update, 0 to delete, 1 unchanged.\n\nNothing to apply.\n"
    assert live.policies()["Lenient RAG"]["version"] == 2
    assert live.api("GET", "audit-log/?page_size=200").json()["results"] == audit_rows
    # A second pull writes the same file back: stable names and key order.
    assert live.cli("policies", "pull", str(tmp_path)).returncode == 0
    assert file.read_text() == PULLED.replace("min_grounding_score: 0.6", "min_grounding_score: 0.7")


BAD_FILES = {
    "bad rule": (
        {"b.yaml": "name: Strict\ncategory: grounding\nrules:\n  min_citations: 2\n  min_grounding_score: 1.5\n"},
        "b.yaml:5: rules.min_grounding_score: Must be a number between 0.0 and 1.0.",
    ),
    "unknown rule": (
        {"b.yaml": "name: Strict\ncategory: grounding\nrules:\n  min_citation: 2\n"},
        "b.yaml:4: rules.min_citation: Unknown rule.",
    ),
    "unknown category": (
        {"b.yaml": "name: Strict\ncategory: groundedness\n"},
        "b.yaml:2: category: Unknown category 'groundedness'. Available: grounding.",
    ),
    "duplicate name": (
        {"b.yaml": "name: Lenient RAG\ncategory: grounding\n"},
        "b.yaml:1: name: {dir}/a.yaml names the same policy.",
    ),
    "a key given twice": (
        {"b.yaml": "name: Strict\ncategory: grounding\nrules:\n  min_citations: 2\n  min_citations: 3\n"},
        "b.yaml:5: rules.min_citations: given twice.",
    ),
    "invalid YAML": (
        {"b.yaml": "name: Strict\ncategory: [grounding\nrules: {}\n"},
        "b.yaml:3:6: invalid YAML: expected ',' or ']', but got ':'",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_fails_plan_and_apply_naming_the_file_and_field(live, fresh, tmp_path, case):
    files, message = BAD_FILES[case]
    good = PULLED.replace("min_grounding_score: 0.6", "min_grounding_score: 0.7")
    (tmp_path / "a.yaml").write_text(good)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for verb in ("plan", "apply"):
        result = live.cli("policies", verb, str(tmp_path), *(["--yes"] if verb == "apply" else []))
        assert result.returncode == 1, (verb, result.stdout)
        assert result.stderr == f"{tmp_path}/{message.format(dir=tmp_path)}\n"
    policies = live.policies()
    assert list(policies) == ["Lenient RAG"] and policies["Lenient RAG"]["version"] == 1


def _dashboard_edit(live, policy_id: int) -> None:
    """Sign in to the dashboard and save an edit of the policy (confirming it, it is managed by code)."""
    with httpx.Client(base_url=live.url, timeout=60, follow_redirects=False) as browser:
        browser.get("/accounts/login/")
        token = browser.cookies["csrftoken"]
        login = {"username": ADMIN[0], "password": ADMIN[1], "csrfmiddlewaretoken": token}
        assert browser.post("/accounts/login/", data=login).status_code == 302
        browser.get(f"/policies/{policy_id}/edit/")  # signing in rotates the CSRF token
        token = browser.cookies["csrftoken"]
        data = form_data(name="Lenient RAG", agents="", confirm_managed="yes", csrfmiddlewaretoken=token)
        data.update({"rule_min_grounding_score": "0.6", "rule_max_unsupported_claims": "3", "rule_min_citations": "3"})
        saved = browser.post(f"/policies/{policy_id}/edit/", data=data)
        assert saved.status_code == 302, saved.text[:3000]


def test_a_dashboard_edit_between_plan_and_apply_fails_the_apply_with_409(live, fresh, tmp_path):
    assert live.cli("policies", "pull", str(tmp_path)).returncode == 0
    file = tmp_path / "lenient-rag.yaml"
    file.write_text(PULLED.replace("min_grounding_score: 0.6", "min_grounding_score: 0.7"))
    (tmp_path / "new.yaml").write_text("name: New\ncategory: grounding\n")
    # apply without --yes asks on its terminal; the dashboard edit lands while it waits.
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundrule", "policies", "apply", str(tmp_path)],
        env=live.env(live.admin_key),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + 120
    while b"Only 'yes' applies: " not in shown:
        assert time.monotonic() < deadline and proc.poll() is None, shown
        if select.select([proc.stdout], [], [], 1)[0]:
            shown += os.read(proc.stdout.fileno(), 65536)
    assert b"~ Lenient RAG: update (v1 \xe2\x86\x92 v2)" in shown
    _dashboard_edit(live, fresh["id"])
    os.write(controller, b"yes\n")
    _, errors = proc.communicate(timeout=120)
    os.close(controller)
    assert proc.returncode == 1
    assert errors.decode() == (
        "Changed since the plan: “Lenient RAG”. Nothing was applied; run plan again.\n"
        "  Lenient RAG (planned at v1, now v2)\n"
    )
    policies = live.policies()
    assert list(policies) == ["Lenient RAG"]  # New was not created either
    assert policies["Lenient RAG"]["version"] == 2 and policies["Lenient RAG"]["rules"]["min_citations"] == 3
    assert policies["Lenient RAG"]["rules"]["min_grounding_score"] == 0.6


def test_prune_deletes_only_what_the_directory_no_longer_has(live, fresh, tmp_path):
    for name in ("Gone", "Kept"):
        body = {"name": name, "category": "grounding", "rules": STRICT}
        assert live.api("POST", "policies/", json=body).status_code == 201
    assert live.cli("policies", "pull", str(tmp_path)).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.yaml", "kept.yaml", "lenient-rag.yaml"]
    (tmp_path / "gone.yaml").unlink()
    without = live.cli("policies", "plan", str(tmp_path))
    assert (without.returncode, without.stdout) == (0, "Plan: 0 to create, 0 to update, 0 to delete, 2 unchanged.\n")
    plan = live.cli("policies", "plan", str(tmp_path), "--prune")
    assert plan.returncode == 2 and "- Gone: delete (v1)\n" in plan.stdout
    applied = live.cli("policies", "apply", str(tmp_path), "--prune", "--yes")
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.endswith("Applied: 0 created, 0 updated, 1 deleted, 2 unchanged.\n")
    policies = live.policies()
    assert sorted(policies) == ["Kept", "Lenient RAG"]
    assert all(p["version"] == 1 for p in policies.values())
    deleted = live.audit("policies.policy.deleted")
    assert deleted[0]["object_repr"] == "Gone" and deleted[0]["after"] == {"source": "apply"}


def test_a_read_key_plans_but_cannot_apply(live, fresh, tmp_path):
    assert live.cli("policies", "pull", str(tmp_path), key=live.read_key).returncode == 0
    (tmp_path / "lenient-rag.yaml").write_text(PULLED.replace("enabled: true", "enabled: false"))
    plan = live.cli("policies", "plan", str(tmp_path), key=live.read_key)
    assert plan.returncode == 2 and "    enabled: true → false\n" in plan.stdout
    apply = live.cli("policies", "apply", str(tmp_path), "--yes", key=live.read_key)
    assert apply.returncode == 1
    assert apply.stderr == (
        f"POST {live.url}/api/v1/policies/apply/: HTTP 403: "
        "This needs an API key with the admin scope; this key has the read scope.\n"
    )
    assert live.policies()["Lenient RAG"]["enabled"] is True


def test_another_tenant_neither_sees_nor_changes_acmes_policies(live, fresh, tmp_path):
    pulled = live.cli("policies", "pull", str(tmp_path / "globex"), key=live.globex_key)
    assert pulled.stdout == f"Wrote 0 policy files to {tmp_path / 'globex'}.\n"
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "lenient-rag.yaml").write_text(PULLED)
    plan = live.cli("policies", "plan", str(tmp_path / "acme"), "--prune", key=live.globex_key)
    assert plan.returncode == 2 and "+ Lenient RAG: create" in plan.stdout  # acme's is not globex's to update
    pruned = live.cli("policies", "apply", str(tmp_path / "globex"), "--prune", "--yes", key=live.globex_key)
    assert pruned.returncode == 0 and pruned.stdout.endswith("Nothing to apply.\n")
    assert live.policies()["Lenient RAG"]["version"] == 1


def test_no_server_or_key_is_an_error_naming_the_setting(live, tmp_path):
    env = live.env(None)
    result = subprocess.run(
        [sys.executable, "-m", "groundrule", "policies", "plan", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("No Groundrule API key: pass --key or set GROUNDRULE_API_KEY")


def test_the_installed_console_script_plans(live, fresh, tmp_path):
    """`groundrule` as `make venv` installs it (the SDK package's console script)."""
    script = Path(sys.executable).parent / "groundrule"
    if not script.exists():
        pytest.skip("the virtualenv's SDK predates the groundrule command: `make venv` installs it")
    env = live.env(live.admin_key)
    env.pop("PYTHONPATH")
    (tmp_path / "lenient-rag.yaml").write_text(PULLED.replace("mode: enforce", "mode: shadow"))
    result = subprocess.run([str(script), "policies", "plan", str(tmp_path)], env=env, capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "    mode: enforce → shadow\n" in result.stdout
