"""The outbox: queued work is a row of the report's transaction, runs once per row, and waits for
the relay when the broker refuses it. Tasks run in-process here (eager); tests/test_faults.py
runs the same paths against a real broker and worker."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from django_scopes import scopes_disabled
from fake_llm_server import FakeLLMServer
from test_judges_integration import UNGROUNDED, judge_rules, report, start, store_provider_secrets
from worker_support import broker_at

from config.celery import app
from governance.models import Evaluation
from governance.tasks import judge_decision
from outbox import services
from outbox.models import OutboxMessage

WARN_IN_BACKGROUND = judge_rules(action_on_violation="warn")  # a warn judge never holds the agent


@pytest.fixture
def llm_server(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]  # the fake provider listens on loopback
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def judged_tenant(acme, make_policy, llm_server):
    acme.score_audit_rate = 0  # one outbox row per report: the judgement
    acme.save(update_fields=["score_audit_rate"])
    store_provider_secrets(acme, llm_server)
    make_policy(rules=WARN_IN_BACKGROUND)
    return acme


def _llm_evaluations(run_id):
    with scopes_disabled():
        return list(Evaluation.objects.filter(run_id=run_id, source="llm_judge"))


@pytest.mark.django_db(transaction=True)
def test_a_background_judgement_is_a_row_done_once_it_ran(api, judged_tenant, llm_server):
    run_id = start(api)
    report(api, run_id, UNGROUNDED)

    message = OutboxMessage.objects.get()
    assert message.task == judge_decision.name
    assert message.done_at is not None
    assert message.result == "warn"
    assert len(_llm_evaluations(run_id)) == 1


@pytest.mark.django_db(transaction=True)
def test_a_second_delivery_of_a_done_row_writes_nothing(api, judged_tenant, llm_server):
    run_id = start(api)
    report(api, run_id, UNGROUNDED)
    message = OutboxMessage.objects.get()

    again = judge_decision.apply(kwargs={**message.kwargs, services.MESSAGE_KWARG: message.pk})

    assert again.get() == "outbox:skipped"
    assert len(_llm_evaluations(run_id)) == 1
    assert llm_server.request_count == 1


@pytest.mark.django_db(transaction=True)
def test_work_of_a_rolled_back_transaction_is_never_queued(acme):
    with pytest.raises(RuntimeError), transaction.atomic():
        services.enqueue(task=judge_decision, kwargs={"decision_id": 1, "spec": {}, "kind": "llm_judge"})
        raise RuntimeError("the report failed")

    assert not OutboxMessage.objects.exists()


@pytest.fixture
def broker_down():
    """The broker is a closed port and tasks are not eager: what production sees when Redis is down."""
    with broker_at("redis://127.0.0.1:1/0"):
        before = app.conf.task_always_eager
        app.conf.task_always_eager = False
        yield
        app.conf.task_always_eager = before


@pytest.mark.django_db(transaction=True)
def test_broker_down_the_report_answers_and_its_row_waits_for_the_relay(api, judged_tenant, llm_server, broker_down):
    run_id = start(api)
    report(api, run_id, UNGROUNDED)

    message = OutboxMessage.objects.get()
    assert message.done_at is None
    assert message.relay_after <= timezone.now()  # refused by the broker: due at once
    assert _llm_evaluations(run_id) == []
    assert services.relay() == (0, 1)  # still down: refused again, due again at the next pass
    message.refresh_from_db()
    assert message.relay_after <= timezone.now()
    assert message.sends == 0  # an outage does not count towards giving up


@pytest.mark.django_db(transaction=True)
def test_the_relay_sends_due_rows_once_the_broker_is_back(api, judged_tenant, llm_server, broker_down):
    run_id = start(api)
    report(api, run_id, UNGROUNDED)
    # The broker is back (eager stands in for it here): the relay command sends the pending row.
    app.conf.task_always_eager = True

    call_command("relay_outbox")

    assert OutboxMessage.objects.get().done_at is not None
    assert len(_llm_evaluations(run_id)) == 1
    call_command("relay_outbox")  # nothing left to send: nothing written twice
    assert len(_llm_evaluations(run_id)) == 1


@pytest.mark.django_db
def test_the_relay_leaves_rows_not_yet_due_and_forgets_old_done_ones(settings):
    now = timezone.now()
    not_due = OutboxMessage.objects.create(task="x", relay_after=now + timedelta(minutes=5))
    old_done = OutboxMessage.objects.create(
        task="x", relay_after=now, done_at=now - timedelta(seconds=settings.OUTBOX_KEEP_DONE_SECONDS + 1)
    )
    given_up = OutboxMessage.objects.create(task="x", relay_after=now, sends=settings.OUTBOX_MAX_SENDS)

    assert services.relay() == (0, 0)

    assert OutboxMessage.objects.filter(pk=not_due.pk, sends=0).exists()
    assert not OutboxMessage.objects.filter(pk=old_done.pk).exists()
    assert services.outbox_state()["stuck"] == 1
    assert OutboxMessage.objects.filter(pk=given_up.pk).exists()


@pytest.mark.django_db
def test_a_live_lease_keeps_a_second_copy_out_until_it_expires():
    message = OutboxMessage.objects.create(task="t", kwargs={"a": 1}, relay_after=timezone.now())
    claim = {"message_id": message.pk, "task": "t", "kwargs": {"a": 1}, "lease_seconds": 60}

    assert services.claim(holder="first", **claim)
    assert not services.claim(holder="second", **claim)
    assert services.claim(holder="first", **claim)  # the same message, redelivered after its worker died
    OutboxMessage.objects.filter(pk=message.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert services.claim(holder="second", **claim)


@pytest.mark.django_db
def test_a_message_that_is_not_its_rows_work_is_refused():
    message = OutboxMessage.objects.create(task="t", kwargs={"a": 1}, relay_after=timezone.now())

    assert not services.claim(message_id=message.pk, task="t", kwargs={"a": 2}, holder="h", lease_seconds=60)
    assert not services.claim(message_id=message.pk, task="u", kwargs={"a": 1}, holder="h", lease_seconds=60)


@pytest.mark.django_db
def test_readiness_and_metrics_show_the_backlog(client):
    an_hour_ago = timezone.now() - timedelta(hours=1)
    OutboxMessage.objects.create(task="t", created_at=an_hour_ago, relay_after=an_hour_ago)
    OutboxMessage.objects.create(task="t", relay_after=timezone.now(), done_at=timezone.now())

    ready = client.get("/readyz").json()["checks"]["outbox"]
    assert ready["status"] == "ok"  # a backlog is reported, not a reason to leave the load balancer
    assert ready["pending"] == 1 and ready["stuck"] == 0
    assert 3590 < ready["oldest_pending_seconds"] < 3700

    scraped = client.get("/metrics").content.decode()
    assert "groundrule_outbox_pending 1.0" in scraped


@pytest.mark.django_db
def test_a_task_that_kills_every_worker_is_given_up_after_a_few(settings):
    settings.OUTBOX_MAX_CRASHES = 2
    message = OutboxMessage.objects.create(task="t", kwargs={}, relay_after=timezone.now())
    claim = {"message_id": message.pk, "task": "t", "kwargs": {}, "lease_seconds": 60}

    assert services.claim(holder="a", **claim)
    assert services.claim(holder="a", **claim)  # redelivered: its worker died mid-run (1)
    assert services.claim(holder="a", **claim)  # and again (2)
    assert not services.claim(holder="a", **claim)  # a poison message does not go round the workers forever

    assert services.outbox_state()["stuck"] == 1
    OutboxMessage.objects.filter(pk=message.pk).update(relay_after=timezone.now() - timedelta(seconds=1))
    assert services.relay() == (0, 0)


@pytest.mark.django_db
def test_a_released_row_is_not_a_crash(settings):
    message = OutboxMessage.objects.create(task="t", kwargs={}, relay_after=timezone.now())
    claim = {"message_id": message.pk, "task": "t", "kwargs": {}, "holder": "a", "lease_seconds": 60}
    for _ in range(settings.OUTBOX_MAX_CRASHES + 2):  # a webhook retried many times
        assert services.claim(**claim)
        services.release(message_id=message.pk)

    message.refresh_from_db()
    assert message.crashes == 0


@pytest.mark.django_db
def test_work_the_broker_lost_is_done_within_two_minutes_by_default(api, judged_tenant, llm_server, monkeypatch):
    # Not a transactional test: the report's on-commit send never happens, as when the broker
    # accepted the message and then lost it (a Redis restart without persistence).
    run_id = start(api)
    report(api, run_id, UNGROUNDED)
    message = OutboxMessage.objects.get()
    assert _llm_evaluations(run_id) == []

    # At the latest, the relay after the row's turn comes: its own delay plus one relay interval.
    from django.conf import settings

    recovery = timedelta(seconds=settings.OUTBOX_RELAY_AFTER_SECONDS + settings.OUTBOX_RELAY_INTERVAL_SECONDS)
    assert recovery <= timedelta(minutes=2)  # five and a half minutes before
    later = message.created_at + recovery
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert services.relay() == (1, 0)
    assert len(_llm_evaluations(run_id)) == 1
    assert services.relay() == (0, 0)  # done: the next passes send nothing
    assert len(_llm_evaluations(run_id)) == 1 and llm_server.request_count == 1
