from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from core.partitions import MONTHS_AHEAD, ensure_partitions, partitioned_tables, partitions

MAX_MONTHS_AHEAD = 120


class Command(BaseCommand):
    help = (
        "Make the monthly partitions of the history tables (reports, spans, evaluations, audit log) "
        "from this month to --months-ahead months ahead. PostgreSQL only; idempotent. "
        "A daily Celery beat task does the same."
    )

    def add_arguments(self, parser):
        parser.add_argument("--months-ahead", type=int, default=MONTHS_AHEAD)

    def handle(self, months_ahead, **options):
        if not 0 <= months_ahead <= MAX_MONTHS_AHEAD:
            # Ten years of empty tables is already more than any plan needs; far more would only
            # fill the catalogue (and past year 9999 fail half-way).
            raise CommandError(f"--months-ahead must be from 0 to {MAX_MONTHS_AHEAD}.")
        if connection.vendor != "postgresql":
            self.stdout.write("Not PostgreSQL: the history tables are plain, nothing to do.")
            return
        made = ensure_partitions(months_ahead=months_ahead)
        for name in made:
            self.stdout.write(f"Made {name}.")
        for table in partitioned_tables():
            months = partitions(table)
            span = f"{months[0].start:%Y-%m} to {months[-1].start:%Y-%m}" if months else "none"
            self.stdout.write(f"{table}: {len(months)} monthly partitions ({span}).")
        if not made:
            self.stdout.write("Every partition needed exists already.")
