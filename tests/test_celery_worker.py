"""An after_workflow judgement end to end: real Redis broker, a real Celery worker process."""

import time

import pytest
from django.conf import settings
from django_scopes import scopes_disabled
from fake_llm_server import FakeLLMServer
from test_judges_integration import (
    UNGROUNDED,
    judge_rules,
    report,
    start,
    store_provider_secrets,
)
from worker_support import NEEDS_BROKER, celery_worker

from governance.models import Evaluation, Run

pytestmark = NEEDS_BROKER


@pytest.fixture
def worker(transactional_db):
    # The fake provider listens on loopback: the worker (and this process, which saves the secret)
    # must allow it past the outbound guard.
    allowed_before = settings.OUTBOUND_ALLOWED_HOSTS
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with celery_worker(OUTBOUND_ALLOWED_HOSTS="127.0.0.1") as proc:
        yield proc
    settings.OUTBOUND_ALLOWED_HOSTS = allowed_before


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
