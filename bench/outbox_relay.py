"""Benchmark: what one outbox relay pass costs, with nothing due and with a backlog.

Run from the repository root:  .venv/bin/python bench/outbox_relay.py [--pending 10000] [--due 500]

The relay (outbox/services.py) runs every OUTBOX_RELAY_INTERVAL_SECONDS; a shorter interval brings
lost work back sooner and costs a pass more often. Measures, in one run, on a database of its own
(a temporary SQLite file, or DATABASE_URL when it names PostgreSQL) and a Redis broker (the
CELERY_BROKER_URL given, default redis://127.0.0.1:6379/4, under a key prefix of its own, removed
at the end; the sent messages name a task no worker runs):

* baseline: a pass over an empty outbox;
* a pass with ``--pending`` rows queued and none due yet (the steady state: work in flight);
* a pass that sends ``--due`` due rows to the broker;

and prints the milliseconds of each (median of several passes), the ratio to the baseline, and what
the passes cost per hour at the old and the new interval. The last line: ``ratio=<idle pass with
the backlog / baseline>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PREFIX = f"bench-outbox-{uuid.uuid4().hex[:8]}:"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/4")
os.environ["CELERY_BROKER_KEY_PREFIX"] = PREFIX
if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='outbox-bench-')}/bench.sqlite3"

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

from outbox import services  # noqa: E402
from outbox.models import OutboxMessage  # noqa: E402

TASK = "bench.outbox.noop"  # registered nowhere: the broker keeps the messages, nobody runs them


def timed_passes(n: int) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        services.relay()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def rows(count: int, due: bool) -> None:
    now = timezone.now()
    when = now - timezone.timedelta(seconds=1) if due else now + timezone.timedelta(hours=1)
    OutboxMessage.objects.bulk_create(
        [OutboxMessage(task=TASK, kwargs={"n": i}, created_at=now, relay_after=when) for i in range(count)],
        batch_size=1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--due", type=int, default=500)
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    call_command("migrate", "--noinput", "-v", "0")
    OutboxMessage.objects.all().delete()
    try:
        timed_passes(3)  # connections and imports warmed
        base = timed_passes(args.passes)
        rows(args.pending, due=False)
        idle = timed_passes(args.passes)
        rows(args.due, due=True)
        started = time.perf_counter()
        sent, refused = services.relay()
        busy = time.perf_counter() - started
    finally:
        OutboxMessage.objects.all().delete()
        try:
            broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
            for key in broker.scan_iter(match=f"{PREFIX}*"):
                broker.delete(key)
        except redis.RedisError:
            pass

    print(
        f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, broker {'redis' if sent else 'down'}"
    )
    print(f"{'relay pass':<44} {'ms':>8} {'x baseline':>11}")
    print(f"{'baseline: empty outbox':<44} {base * 1000:>8.2f} {1.0:>11.1f}")
    print(f"{f'{args.pending} pending, none due':<44} {idle * 1000:>8.2f} {idle / base:>11.1f}")
    label = f"{args.due} due, sent ({sent} sent, {refused} refused)"
    print(f"{label:<44} {busy * 1000:>8.2f} {busy / base:>11.1f}")
    for interval in (30.0, settings.OUTBOX_RELAY_INTERVAL_SECONDS):
        per_hour = 3600 / interval * idle
        print(f"idle passes every {interval:.0f} s: {per_hour:.2f} s of relay time per hour")
    print(f"ratio={idle / base:.2f}")


if __name__ == "__main__":
    main()
