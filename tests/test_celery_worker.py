"""An after_workflow judgement end to end: real Redis broker, a real Celery worker process."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django_scopes import scopes_disabled
from fake_llm_server import FakeLLMServer
from test_judges_integration import (
    UNGROUNDED,
    judge_rules,
    report,
    start,
    store_provider_secrets,
)

from governance.models import Evaluation, Run

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.skipif(not os.environ.get("CELERY_BROKER_URL"), reason="needs CELERY_BROKER_URL (Redis)"),
]


def _database_url() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the worker process needs a database it can share: PostgreSQL")
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def worker(transactional_db):
    # The fake provider listens on loopback: the worker (and this process, which saves the secret)
    # must allow it past the outbound guard.
    allowed_before = settings.OUTBOUND_ALLOWED_HOSTS
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "OUTBOUND_ALLOWED_HOSTS": "127.0.0.1",
    }
    proc = subprocess.Popen(
        [
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
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    yield proc
    settings.OUTBOUND_ALLOWED_HOSTS = allowed_before
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.django_db(transaction=True)
def test_worker_adds_the_after_workflow_judgement_to_the_run(api, acme, make_policy, worker):
    with FakeLLMServer() as llm_server:
        store_provider_secrets(acme, llm_server)
        make_policy(rules=judge_rules(llm_grounding_phase="after_workflow", action_on_violation="warn"))
        run_id = start(api)
        report(api, run_id, UNGROUNDED)
        done = api.post(f"/api/v1/runs/{run_id}/complete/", {"output": UNGROUNDED}, format="json")
        assert done.status_code == 200

        deadline = time.monotonic() + 60
        judged = None
        while time.monotonic() < deadline and judged is None:
            with scopes_disabled():
                judged = Evaluation.objects.filter(run_id=run_id, source="llm_judge").first()
            if judged is None:
                assert worker.poll() is None, worker.stdout.read()
                time.sleep(0.25)
        assert judged is not None, "the worker never delivered the judgement"
        assert judged.reason == "LLM judge score (0.2) below threshold (0.7)"
        assert judged.action == "warn"
        assert llm_server.request_count == 1
        with scopes_disabled():
            assert Run.objects.get(pk=run_id).final_action == "warn"
