"""Faults against the real services: the broker down while agents report, a worker killed in the
middle of a judgement. Each test asserts what the agent was answered and what was stored.

Needs PostgreSQL (the worker process shares the test's database) and Redis; each test keeps its
broker keys under its own prefix, so workers of other tests running beside it never take its work.
"""

import os
import signal
import threading
import time
import uuid

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone
from django_scopes import scopes_disabled
from fake_llm_server import FakeLLMServer
from test_judges_integration import UNGROUNDED, judge_rules, report, start, store_provider_secrets
from worker_support import NEEDS_BROKER, broker_at, celery_worker, shared_database_url

from governance.models import Evaluation, GroundingReport, Run
from outbox import services as outbox
from outbox.models import OutboxMessage

pytestmark = [pytest.mark.faults, *NEEDS_BROKER]

BROKER_DOWN = "redis://127.0.0.1:1/0"  # nothing listens on port 1
WARN_IN_BACKGROUND = judge_rules(action_on_violation="warn")  # judged by a worker, after the answer


@pytest.fixture
def judged(acme, make_policy, settings):
    """A tenant whose every report queues one LLM judgement, a fake provider, and a broker prefix."""
    shared_database_url()  # skips on SQLite, before anything starts
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    acme.score_audit_rate = 0  # one outbox row per report: its judgement
    acme.save(update_fields=["score_audit_rate"])
    prefix = f"groundrule-faults-{uuid.uuid4().hex[:8]}:"
    try:
        with FakeLLMServer() as llm, broker_at(key_prefix=prefix):
            store_provider_secrets(acme, llm)
            make_policy(rules=WARN_IN_BACKGROUND)
            yield llm, prefix
    finally:  # this test's queue, bindings, and the killed worker's unacknowledged message
        broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        for key in broker.scan_iter(match=f"{prefix}*"):
            broker.delete(key)
        broker.close()


def worker_env(prefix: str, **extra) -> dict:
    return {"OUTBOUND_ALLOWED_HOSTS": "127.0.0.1", "CELERY_BROKER_KEY_PREFIX": prefix, **extra}


def llm_evaluations(run_id) -> list:
    with scopes_disabled():
        return list(Evaluation.objects.filter(run_id=run_id, source="llm_judge"))


def wait_for(condition, *, seconds: float, workers=(), step: float = 0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        for proc in workers:
            assert proc.poll() is None, proc.stdout.read()
        time.sleep(step)
    raise AssertionError(f"not within {seconds} s")


@pytest.mark.django_db(transaction=True)
def test_reports_answered_while_redis_is_down_are_judged_once_it_is_back(api, judged):
    llm, prefix = judged
    with broker_at(BROKER_DOWN):
        runs = [start(api) for _ in range(3)]
        started = time.monotonic()
        # Distinct outputs: identical judgements would be answered from the judge's cache.
        decisions = [report(api, run_id, f"{UNGROUNDED} Report {n}.") for n, run_id in enumerate(runs)]
        answered_in = (time.monotonic() - started) / len(runs)

    # Answered and stored; the judgements wait as rows, not lost with a log line.
    assert [d["action"] for d in decisions] == ["allow"] * 3
    # kombu's own connection retries made each ~6 s; now a refused send fails at once (2 s: a loaded CI).
    assert answered_in < 2.0, f"a report took {answered_in:.2f} s with the broker down"
    with scopes_disabled():
        assert GroundingReport.objects.filter(run_id__in=runs).count() == 3
    pending = OutboxMessage.objects.filter(done_at__isnull=True)
    assert pending.count() == 3
    assert all(m.relay_after <= timezone.now() for m in pending)  # refused by the broker: due at once
    assert llm.request_count == 0

    # The broker is back: the relay (what beat runs) sends the rows, a worker judges each once.
    with celery_worker(**worker_env(prefix)) as worker:
        call_command("relay_outbox")
        wait_for(lambda: all(llm_evaluations(r) for r in runs), seconds=60, workers=[worker])
        wait_for(lambda: not OutboxMessage.objects.filter(done_at__isnull=True).exists(), seconds=10)
        assert outbox.relay() == (0, 0)  # nothing left to send

    assert [len(llm_evaluations(r)) for r in runs] == [1, 1, 1]
    assert llm.request_count == 3
    with scopes_disabled():
        assert set(Run.objects.filter(pk__in=runs).values_list("final_action", flat=True)) == {"warn"}


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_judgement_leaves_it_to_another_which_writes_it_once(api, judged):
    llm, prefix = judged
    first_call, release = threading.Event(), threading.Event()

    def hang_the_first_call(body):
        if not first_call.is_set():
            first_call.set()
            release.wait(120)  # until the test ends: the worker that asked is dead by then
        return "SCORE: 0.2"

    llm.reply_with(hang_the_first_call)
    # A short hard time limit (the judge's timeout + 30 s) makes the lease, and so the wait, short;
    # the first worker is killed well inside the judge's own 2 s timeout.
    env = worker_env(prefix, JUDGE_BACKGROUND_TIMEOUT_SECONDS="2", OUTBOX_LEASE_GRACE_SECONDS="1")
    try:
        with celery_worker(**env) as doomed:
            run_id = start(api)
            report(api, run_id, UNGROUNDED)
            wait_for(first_call.is_set, seconds=30, workers=[doomed], step=0.02)
            os.kill(doomed.pid, signal.SIGKILL)  # mid-judgement: the provider call is in flight
            doomed.wait(10)

        message = OutboxMessage.objects.get()
        assert message.done_at is None and message.claimed_by  # held by the dead worker's lease
        assert llm_evaluations(run_id) == []

        with celery_worker(**env) as survivor:
            # The relay sends it again once the dead worker's lease has run out (~34 s here).
            wait_for(lambda: outbox.relay()[0] == 1, seconds=60, workers=[survivor], step=1)
            wait_for(lambda: llm_evaluations(run_id), seconds=30, workers=[survivor])
            wait_for(lambda: OutboxMessage.objects.filter(done_at__isnull=False).exists(), seconds=10)

            # A second copy of the done row (as the dead worker's message will be, redelivered once
            # Redis's visibility timeout passes): taken, acknowledged, and nothing written.
            broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
            queue, unacked = f"{prefix}celery", f"{prefix}unacked"
            held_before = broker.hlen(unacked)  # the dead worker's message is still held there
            assert outbox.dispatch(OutboxMessage.objects.get())
            wait_for(
                lambda: broker.llen(queue) == 0 and broker.hlen(unacked) == held_before,
                seconds=30,
                workers=[survivor],
            )
            broker.close()
    finally:
        release.set()

    evaluations = llm_evaluations(run_id)
    assert len(evaluations) == 1
    assert evaluations[0].action == "warn"
    assert llm.request_count == 2  # the killed call and the one that landed; the no-op asked nothing
    assert OutboxMessage.objects.get().result == "warn"
