"""Statements PostgreSQL parses and plans once per connection, for the few hot paths whose ORM query
costs more Python than the rest of their work: a grounding report's read and write
(governance/report_write.py), a run's start, the API key behind every API request (tenants/auth.py).
"""

from django.conf import settings
from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor


def prepared_cursor():
    """A cursor whose statements PostgreSQL parses and plans once per connection, not per call.

    Django binds parameters client-side (psycopg's ClientCursor), so PostgreSQL would parse and
    plan this long statement afresh for every report (half the database's CPU per report, when
    measured). psycopg prepares only on server-binding cursors whose connection has a
    `prepare_threshold` (Django leaves it None, and ClientCursor never prepares), so only what
    runs on cursors made here is prepared; the ORM's queries are unaffected. With
    OPTIONS["server_side_binding"] the project's own settings apply to every cursor already.
    """
    if connection.settings_dict["OPTIONS"].get("server_side_binding") is True:
        return connection.cursor()
    if not settings.DATABASE_PREPARED_STATEMENTS:
        return connection.cursor()  # the same statements, bound client-side and parsed every time
    connection.ensure_connection()
    pg = connection.connection
    if pg.prepare_threshold is None:
        pg.prepare_threshold = 0  # prepare on first use
    with connection.wrap_database_errors:
        cursor = ServerBindingCursor(pg)
    # Django's wrappers, as connection.cursor() gives: query logging, error translation.
    return connection.make_debug_cursor(cursor) if connection.queries_logged else connection.make_cursor(cursor)
