"""Prometheus metrics: what the server counts, and `/metrics` to scrape them.

Counters and histograms live in prometheus-client's default registry. Under gunicorn with several
workers (or next to a Celery worker on the same host) set PROMETHEUS_MULTIPROC_DIR to an empty,
writable directory shared by every process: each process then writes its values there and the
scrape adds them up (prometheus-client's multiprocess mode). Without it, a scrape sees only the
process that answers it.

Every series carries a ``tenant`` label. It holds the tenant's slug only when
METRICS_TENANT_LABELS is on; otherwise it is empty, which Prometheus treats as no label at all,
so the number of series does not grow with the number of tenants.

Callers pass plain values (duck-typed decisions and evaluation metadata): core imports nothing of ours.
"""

import ipaddress
import logging
import os
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

logger = logging.getLogger("groundrule.metrics")

# Report calls are milliseconds on the hot path; judges are seconds over the network.
FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
JUDGE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)

DECISIONS = Counter(
    "groundrule_decisions", "Decisions returned, by phase and combined action.", ["phase", "action", "tenant"]
)
EVALUATIONS = Counter(
    "groundrule_policy_evaluations",
    "Policy evaluations in returned decisions, by policy.",
    ["phase", "action", "policy", "tenant"],
)
REPORT_LATENCY = Histogram(
    "groundrule_report_latency_seconds",
    "Time to answer a grounding report (POST /runs/{id}/grounding/).",
    ["tenant"],
    buckets=FAST_BUCKETS,
)
JUDGE_CALLS = Counter(
    "groundrule_judge_calls", "LLM judge calls, by provider and outcome status.", ["provider", "status", "tenant"]
)
JUDGE_ERRORS = Counter("groundrule_judge_errors", "LLM judge calls that failed or timed out.", ["provider", "tenant"])
JUDGE_LATENCY = Histogram(
    "groundrule_judge_latency_seconds", "LLM judge provider latency.", ["provider"], buckets=JUDGE_BUCKETS
)
JUDGE_COST = Counter("groundrule_judge_cost_usd", "Estimated LLM judge cost in US dollars.", ["provider", "tenant"])
VERIFIER_LATENCY = Histogram(
    "groundrule_verifier_latency_seconds", "Local verifier latency, by check.", ["check"], buckets=FAST_BUCKETS
)

JUDGE_ERROR_STATUSES = frozenset({"error", "timeout"})


def tenant_label(tenant) -> str:
    if tenant is None or not getattr(settings, "METRICS_TENANT_LABELS", False):
        return ""
    return getattr(tenant, "slug", "") or ""


def observe_decision(decision, *, tenant=None) -> None:
    """Counts one returned decision (anything with phase, action and evaluations)."""
    label = tenant_label(tenant)
    DECISIONS.labels(phase=decision.phase, action=decision.action, tenant=label).inc()
    for evaluation in decision.evaluations:
        EVALUATIONS.labels(
            phase=evaluation.phase, action=evaluation.action, policy=evaluation.policy_name, tenant=label
        ).inc()


def observe_report_latency(seconds: float, *, tenant=None) -> None:
    REPORT_LATENCY.labels(tenant=tenant_label(tenant)).observe(seconds)


def observe_judgement(*, kind: str, metadata: dict, seconds: float, tenant=None) -> None:
    """One judge or verifier run. ``metadata`` is the evaluation's: an LLM judge puts what the
    provider said under ``judge`` (status, provider, latency_ms, cost_usd, cached), the verifier's
    LLM escalation of undecided claims under ``escalation`` (the same keys)."""
    if kind != "llm_judge":
        VERIFIER_LATENCY.labels(check=kind).observe(seconds)
        escalation = metadata.get("escalation") or {}
        if escalation.get("provider") and escalation.get("status") != "nothing_to_escalate":
            observe_provider_call(escalation, tenant)
        return
    observe_provider_call(metadata.get("judge") or {}, tenant)


def observe_provider_call(call: dict, tenant) -> None:
    """One provider call (the judge, or the verifier escalation): counted, timed and its cost added."""
    provider = call.get("provider") or "unknown"
    label = tenant_label(tenant)
    # A cached verdict costs nothing and calls nobody: counted, but as what it is.
    status = "cached" if call.get("cached") else (call.get("status") or "unknown")
    JUDGE_CALLS.labels(provider=provider, status=status, tenant=label).inc()
    if status in JUDGE_ERROR_STATUSES:
        JUDGE_ERRORS.labels(provider=provider, tenant=label).inc()
    if status != "cached" and call.get("latency_ms"):
        JUDGE_LATENCY.labels(provider=provider).observe(float(call["latency_ms"]) / 1000)
    if status != "cached" and call.get("cost_usd"):
        JUDGE_COST.labels(provider=provider, tenant=label).inc(float(call["cost_usd"]))


class QueueDepthCollector:
    """`groundrule_celery_queue_depth`: messages waiting in each Celery queue, read at scrape time.

    A Redis broker keeps a queue as a list named after it, so LLEN is its depth. Other brokers
    (and the eager, brokerless demo) report nothing rather than a wrong zero.
    """

    def __init__(self, queues=("celery",)):
        self.queues = queues

    def collect(self):
        url = getattr(settings, "CELERY_BROKER_URL", "")
        if not url or urlsplit(url).scheme not in ("redis", "rediss"):
            return
        family = GaugeMetricFamily(
            "groundrule_celery_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        try:
            client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
            try:
                # Under CELERY_BROKER_KEY_PREFIX the queue's list carries the prefix too.
                prefix = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}).get("global_keyprefix", "")
                for queue in self.queues:
                    family.add_metric([queue], client.llen(prefix + queue))
            finally:
                client.close()
        except Exception as exc:  # an unreachable broker must not fail the whole scrape
            logger.warning("queue depth unavailable: %s", type(exc).__name__)
            return
        yield family


# Collectors an app above core adds to every scrape, registered from its AppConfig.ready().
EXTRA_COLLECTORS: list = []


def registry() -> CollectorRegistry:
    """What a scrape reads: every process's values in multiprocess mode, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        collected = CollectorRegistry()
        MultiProcessCollector(collected)
    else:
        collected = CollectorRegistry(auto_describe=True)
        collected.register(_Default())
    collected.register(QueueDepthCollector(tuple(getattr(settings, "METRICS_CELERY_QUEUES", ("celery",)))))
    for collector in EXTRA_COLLECTORS:
        collected.register(collector)
    return collected


class _Default:
    """The default registry as one collector, so a scrape registry can add the queue depth to it."""

    def collect(self):
        return REGISTRY.collect()


#: Headers a reverse proxy adds to what it forwards (nginx, Caddy, Traefik, gunicorn's own list).
FORWARDED_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_FORWARDED", "HTTP_X_FORWARDED_PROTO")


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _allowed(request) -> bool:
    token = getattr(settings, "METRICS_TOKEN", "")
    if token:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and constant_time_compare(given.strip(), token)
    # No token configured: only a scraper on this host (or a sidecar sharing its loopback). A request
    # a proxy forwarded is not one: behind a reverse proxy on the same host every client arrives from
    # loopback, which made /metrics public.
    if any(request.META.get(h) for h in FORWARDED_HEADERS):
        return False
    return _is_loopback(request.META.get("REMOTE_ADDR", ""))


@require_GET
def metrics_view(request):
    if not _allowed(request):
        return JsonResponse(
            {"detail": "Metrics need the scrape token (METRICS_TOKEN) or a loopback client."}, status=403
        )
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
