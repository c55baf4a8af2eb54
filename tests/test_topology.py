"""The deployed topology on this machine (`make prod-local`, deploy/prod_local.py): gunicorn with
several workers, a Celery worker and beat, against PostgreSQL and Redis. Agents' reports go in
over HTTP; the after_workflow LLM judgement is queued by a web worker, judged by the Celery worker
(against the local fake provider) and lands on the run, once per run."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from django_scopes import scopes_disabled
from fake_llm_server import FakeLLMServer
from test_judges_integration import (
    SOURCES,
    UNGROUNDED,
    judge_rules,
    store_provider_secrets,
)

from governance.models import Evaluation, Run

ROOT = Path(__file__).resolve().parent.parent
RUNS = 4

pytestmark = [
    pytest.mark.topology,
    pytest.mark.skipif(not os.environ.get("CELERY_BROKER_URL"), reason="needs CELERY_BROKER_URL (Redis)"),
]


def _database_url() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the topology's processes share one database: PostgreSQL")
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def topology(transactional_db, tmp_path):
    port = _free_port()
    # The fake provider listens on loopback, which the outbound guard refuses unless allowed: here
    # (the test stores its URL as a secret) and in the topology's processes.
    overridden = override_settings(OUTBOUND_ALLOWED_HOSTS=["127.0.0.1"])
    overridden.enable()
    # The same keys as this process: the tenant secrets the test stores must decrypt in the worker.
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "SECRET_KEY": settings.SECRET_KEY,
        "GOVERNANCE_SECRETS_KEY": settings.GOVERNANCE_SECRETS_KEY,
        "PYTHONWARNINGS": "ignore",
        "STATIC_ROOT": str(tmp_path / "static"),
        "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
    }
    env.pop("DATABASE_REPLICA_URL", None)
    log_path = tmp_path / "prod-local.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "deploy/prod_local.py",
                "--port",
                str(port),
                "--web-workers",
                "3",
                "--threads",
                "2",
                "--worker-concurrency",
                "2",
                "--no-migrate",
                "--no-collectstatic",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while "ready http://" not in log_path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("prod-local did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.3)
        yield {"url": f"http://127.0.0.1:{port}", "proc": proc, "log": log_path}
    finally:
        # SIGTERM: prod_local.py stops gunicorn, the worker and beat (each in its own session) itself.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        overridden.disable()


def _children(pid: int) -> list[str]:
    kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [Path(f"/proc/{kid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for kid in kids]


def test_reports_through_the_topology_get_their_background_judgement_once(acme, acme_key, make_policy, topology):
    _, raw_key = acme_key
    with FakeLLMServer() as llm_server:
        store_provider_secrets(acme, llm_server)
        make_policy(rules=judge_rules(llm_grounding_phase="after_workflow", action_on_violation="warn"))

        with httpx.Client(base_url=topology["url"], headers={"Authorization": f"Bearer {raw_key}"}, timeout=30) as http:
            ready = http.get("/readyz").json()
            assert ready["status"] == "ok" and ready["checks"]["broker"]["status"] == "ok"
            run_ids = []
            for n in range(RUNS):
                output = f"{UNGROUNDED} Case {n}."  # a different answer each: no judgement from the cache
                started = http.post("/api/v1/runs/", json={"agent_name": "research-agent"})
                assert started.status_code == 201, started.text
                run_id = started.json()["id"]
                grounded = http.post(
                    f"/api/v1/runs/{run_id}/grounding/",
                    json={"grounding_scores": [0.9], "citations": ["fed-2023"], "output": output, "sources": SOURCES},
                )
                assert grounded.status_code == 200, grounded.text
                done = http.post(f"/api/v1/runs/{run_id}/complete/", json={"output": output})
                assert done.status_code == 200, done.text
                # The answer came back before the judge: the judgement is the worker's.
                assert not any(e.get("source") == "llm_judge" for e in done.json()["decision"]["evaluations"])
                run_ids.append(run_id)

            deadline = time.monotonic() + 90
            judged = {}
            while time.monotonic() < deadline and len(judged) < RUNS:
                with scopes_disabled():
                    judged = {e.run_id: e for e in Evaluation.objects.filter(run_id__in=run_ids, source="llm_judge")}
                time.sleep(0.3)
            assert len(judged) == RUNS, "judgements missing:\n" + topology["log"].read_text()[-3000:]
            time.sleep(1.0)  # a duplicate delivery would land about now

            with scopes_disabled():
                assert Evaluation.objects.filter(run_id__in=run_ids, source="llm_judge").count() == RUNS
                final = set(Run.objects.filter(pk__in=run_ids).values_list("final_action", flat=True))
            assert [(e.action, e.reason) for e in judged.values()] == [
                ("warn", "LLM judge score (0.2) below threshold (0.7)")
            ] * RUNS
            assert final == {"warn"}
            assert llm_server.request_count == RUNS

            # What the web nodes show is what the worker wrote.
            detail = http.get(f"/api/v1/runs/{run_ids[0]}/?expand=all").json()
            assert [e["source"] for e in detail["evaluations"]].count("llm_judge") == 1

    processes = _children(topology["proc"].pid)
    assert any("gunicorn" in p for p in processes)
    assert any(" worker" in p for p in processes)
    assert any(" beat" in p for p in processes)
    assert topology["proc"].poll() is None
