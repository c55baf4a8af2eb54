"""/metrics: who may scrape, and that decisions, report latency, judges and the queue are counted."""

import pytest
import redis
from django.test import Client, override_settings
from fake_llm_server import FakeLLMServer
from prometheus_client import values
from prometheus_client.parser import text_string_to_metric_families
from test_judges_integration import (
    UNGROUNDED,
    judge_rules,
    report,
    start,
    store_provider_secrets,
)

from core import metrics

pytestmark = pytest.mark.django_db

REDIS_URL = "redis://127.0.0.1:6379/14"


@pytest.fixture(autouse=True)
def _fake_provider_on_loopback(settings):
    # The fake LLM provider listens on loopback, which the outbound guard refuses unless allowed.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


def scrape(client=None, **extra) -> dict[tuple, float]:
    response = (client or Client()).get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_loopback_may_scrape_without_a_token_and_others_may_not():
    assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1
    assert Client(REMOTE_ADDR="::1").get("/metrics").status_code == 200
    refused = Client(REMOTE_ADDR="10.1.2.3").get("/metrics")
    assert refused.status_code == 403
    assert "METRICS_TOKEN" in refused.json()["detail"]


@pytest.mark.parametrize(
    "header", ["HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_FORWARDED", "HTTP_X_FORWARDED_PROTO"]
)
def test_a_request_a_proxy_on_this_host_forwarded_is_not_a_loopback_scraper(header):
    # Behind a reverse proxy on the same host every client arrives from 127.0.0.1.
    refused = Client(REMOTE_ADDR="127.0.0.1").get("/metrics", **{header: "203.0.113.9"})
    assert refused.status_code == 403


@override_settings(METRICS_TOKEN="scrape-me-0123456789")
def test_a_configured_token_is_required_even_from_loopback():
    assert Client().get("/metrics").status_code == 403
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    remote = Client(REMOTE_ADDR="10.1.2.3")
    assert remote.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me-0123456789").status_code == 200


def test_decisions_are_counted_by_phase_action_and_policy(api, make_policy):
    make_policy(name="Strict", rules={"min_grounding_score": 0.8, "action_on_violation": "block"})
    before = scrape()
    run_id = start(api)
    decision = report(api, run_id, "An answer.", grounding_scores=[0.2])
    assert decision["action"] == "block"
    after = scrape()

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("groundrule_decisions_total", phase="before_workflow", action="allow", tenant="") == 1
    assert delta("groundrule_decisions_total", phase="mid_execution", action="block", tenant="") == 1
    assert (
        delta("groundrule_policy_evaluations_total", phase="mid_execution", action="block", policy="Strict", tenant="")
        == 1
    )
    assert delta("groundrule_report_latency_seconds_count", tenant="") == 1
    assert value(after, "groundrule_report_latency_seconds_sum", tenant="") > 0


def test_tenant_slug_is_a_label_only_when_asked(api, make_policy):
    with override_settings(METRICS_TENANT_LABELS=True):
        start(api)
        samples = scrape()
    assert value(samples, "groundrule_decisions_total", phase="before_workflow", action="allow", tenant="acme") >= 1
    before = value(samples, "groundrule_decisions_total", phase="before_workflow", action="allow", tenant="acme")
    start(api)
    assert (
        value(scrape(), "groundrule_decisions_total", phase="before_workflow", action="allow", tenant="acme") == before
    )


def test_judge_calls_latency_and_cost_by_provider(api, acme, make_policy):
    with FakeLLMServer() as server:
        store_provider_secrets(acme, server, "openai")
        make_policy(rules=judge_rules())
        before = scrape()
        run_id = start(api)
        decision = report(api, run_id, UNGROUNDED)
        assert decision["action"] == "block"
        report(api, run_id, UNGROUNDED)  # the same question again: answered from the judgement cache
        after = scrape()

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("groundrule_judge_calls_total", provider="openai", status="ok", tenant="") == 1
    assert delta("groundrule_judge_calls_total", provider="openai", status="cached", tenant="") == 1
    assert delta("groundrule_judge_latency_seconds_count", provider="openai") == 1
    assert delta("groundrule_judge_cost_usd_total", provider="openai", tenant="") > 0
    assert delta("groundrule_judge_errors_total", provider="openai", tenant="") == 0


def test_judge_errors_are_counted(api, acme, make_policy):
    with FakeLLMServer() as server:
        store_provider_secrets(acme, server, "openai")
        make_policy(rules=judge_rules())
        server.fail_with(500)
        before = value(scrape(), "groundrule_judge_errors_total", provider="openai", tenant="")
        report(api, start(api), UNGROUNDED)
        assert value(scrape(), "groundrule_judge_errors_total", provider="openai", tenant="") == before + 1


def test_verifier_latency_is_observed(api, make_policy):
    make_policy(rules={"min_grounding_score": 0.0, "nli_check": True, "nli_phase": "mid_execution"})
    before = value(scrape(), "groundrule_verifier_latency_seconds_count", check="verifier")
    report(
        api,
        start(api),
        "The Federal Reserve raised rates.",
        sources=[{"id": "s1", "text": "The Federal Reserve raised interest rates in July 2023."}],
    )
    assert value(scrape(), "groundrule_verifier_latency_seconds_count", check="verifier") == before + 1


def test_celery_queue_depth_is_read_from_a_redis_broker():
    connection = redis.Redis.from_url(REDIS_URL)
    try:
        connection.ping()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    queue = "groundrule-test-metrics-queue"
    connection.delete(queue)
    connection.rpush(queue, "a", "b", "c")
    try:
        with override_settings(CELERY_BROKER_URL=REDIS_URL, METRICS_CELERY_QUEUES=[queue]):
            samples = scrape()
    finally:
        connection.delete(queue)
    assert value(samples, "groundrule_celery_queue_depth", queue=queue) == 3


def test_no_broker_means_no_queue_depth_and_an_unreachable_one_does_not_break_the_scrape():
    with override_settings(CELERY_BROKER_URL=""):
        assert not any(name == "groundrule_celery_queue_depth" for name, _ in scrape())
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        assert not any(name == "groundrule_celery_queue_depth" for name, _ in scrape())


def test_multiprocess_mode_adds_up_what_every_process_wrote(tmp_path, monkeypatch):
    # What gunicorn workers do: each writes its values to PROMETHEUS_MULTIPROC_DIR; a scrape sums them.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    values.ValueClass = values.get_value_class()
    try:
        counter = metrics.Counter("groundrule_test_multiprocess", "test", ["tenant"], registry=None)
        counter.labels(tenant="").inc(2)
        samples = scrape()
    finally:
        monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
        values.ValueClass = values.get_value_class()
    assert value(samples, "groundrule_test_multiprocess_total", tenant="") == 2
