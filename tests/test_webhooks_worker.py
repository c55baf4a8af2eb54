"""A webhook delivered end to end: real Redis broker, a real Celery worker process, a loopback receiver."""

import time

import pytest
from django.test import override_settings
from django_scopes import scopes_disabled
from pages_support import STRICT
from webhook_receiver import WebhookReceiver
from worker_support import NEEDS_BROKER, celery_worker

from webhooks import signing
from webhooks.models import WebhookDelivery

pytestmark = NEEDS_BROKER


@pytest.fixture
def worker(transactional_db):
    with celery_worker(WEBHOOK_ALLOWED_HOSTS="127.0.0.1") as proc:
        yield proc


@pytest.mark.django_db(transaction=True)
def test_the_worker_delivers_a_signed_block(api, make_policy, worker):
    make_policy(rules=STRICT)
    with override_settings(WEBHOOK_ALLOWED_HOSTS=["127.0.0.1"]), WebhookReceiver() as receiver:
        created = api.post("/api/v1/webhooks/", {"url": receiver.url, "events": ["decision.block"]}, format="json")
        assert created.status_code == 201, created.json()
        run_id = api.post("/api/v1/runs/", {"agent_name": "research-agent"}, format="json").json()["id"]
        blocked = api.post(f"/api/v1/runs/{run_id}/grounding/", {"grounding_scores": [0.2]}, format="json")
        assert blocked.json()["decision"]["action"] == "block"

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not receiver.received:
            assert worker.poll() is None, worker.stdout.read()
            time.sleep(0.2)
        assert receiver.received, "the worker never delivered the webhook"
        got = receiver.received[0]
        assert signing.verify(created.json()["secret"], got.headers["X-Groundrule-Signature"], got.body)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with scopes_disabled():
                delivery = WebhookDelivery.objects.get()
            if delivery.status == "succeeded":
                break
            time.sleep(0.2)
        assert delivery.status == "succeeded" and delivery.attempts == 1 and delivery.response_code == 200
