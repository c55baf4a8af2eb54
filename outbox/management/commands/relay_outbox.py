from django.core.management.base import BaseCommand

from outbox.services import outbox_state, relay


class Command(BaseCommand):
    help = "Send again the queued work the broker has not acknowledged (what Celery beat runs every interval)."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=500, help="rows per pass (default 500)")

    def handle(self, limit, **options):
        sent, refused = relay(limit=limit)
        state = outbox_state()
        self.stdout.write(
            f"Relayed {sent}, refused by the broker {refused}; pending {state['pending']}, "
            f"oldest {state['oldest_pending_seconds']} s, stuck {state['stuck']}."
        )
