from django.apps import AppConfig

from core import health, metrics


class OutboxConfig(AppConfig):
    name = "outbox"

    def ready(self):
        # The models are loaded only now; core imports no app, so the outbox adds its figures itself.
        from .metrics import OutboxCollector
        from .services import outbox_state

        health.register_check("outbox", outbox_state)
        metrics.EXTRA_COLLECTORS.append(OutboxCollector())
