"""The outbox's figures on /metrics, read at scrape time."""

import logging

from prometheus_client.core import GaugeMetricFamily

from .services import outbox_state

logger = logging.getLogger("groundrule.outbox")

GAUGES = {
    "pending": ("groundrule_outbox_pending", "Queued work not done yet (outbox rows)."),
    "oldest_pending_seconds": ("groundrule_outbox_oldest_pending_seconds", "Age of the oldest pending outbox row."),
    "stuck": ("groundrule_outbox_stuck", "Outbox rows the relay stopped sending (OUTBOX_MAX_SENDS reached)."),
}


class OutboxCollector:
    def collect(self):
        try:
            state = outbox_state()
        except Exception as exc:  # a database hiccup must not fail the whole scrape
            logger.warning("outbox state unavailable: %s", type(exc).__name__)
            return
        for key, (name, documentation) in GAUGES.items():
            yield GaugeMetricFamily(name, documentation, value=state[key])
