"""Read replica routing: heavy reads go to the replica, everything else to the primary.

With DATABASE_REPLICA_URL set, settings add a second alias, "replica". A view opts in with
`@reads_replica` (function views) or `reads_replica = True` (class views): the dashboard's list and
detail pages, exports, and the aggregates behind them. While such a view runs on a safe method,
`ReplicaRouter.db_for_read` sends its queries to the replica. Everything else reads the primary:

- every write goes to the primary, and the first write of a request pins the rest of that request
  to the primary (a GET that writes must not read its own write back from a lagging replica);
- a read inside a transaction on the primary stays there (select_for_update, read-modify-write);
- after a user's own write (any unsafe method), that user's requests read the primary for
  REPLICA_STICKY_SECONDS, so a saved policy never seems to vanish: a signed cookie for browsers
  and a cache entry keyed by a hash of the Authorization header for API clients (use a shared
  cache, CACHE_URL, when there is more than one web node).

Without the variable there is no "replica" alias and the router always answers the primary.
Streamed responses run after the view returned (and after this middleware reset its state), so
they must pick their connection while the view runs: `read_alias()` says which one.
"""

import hashlib
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from core.soft_cache import soft_get, soft_set

REPLICA = "replica"
STICKY_COOKIE = "gr_primary"
_COOKIE_SALT = "groundrule.routing.sticky"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# Who may do what is always read from the primary: a revoked key or membership stops working at
# once, and a key or user created a moment ago works at once. These tables are small.
PRIMARY_ONLY = frozenset(
    {"auth.user", "sessions.session", "tenants.tenant", "tenants.membership", "tenants.apikey", "tenants.tenantsecret"}
)

# None: no view has asked; REPLICA: a heavy-read view is running; _PRIMARY: the request wrote.
_PRIMARY = "primary"
_reads: ContextVar[str | None] = ContextVar("groundrule_db_reads", default=None)


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def replica_reads_enabled() -> bool:
    # REPLICA_READS=0 keeps the replica configured (and checked by /readyz) but reads nothing from it.
    return replica_configured() and settings.REPLICA_READS


def reads_replica(view):
    """Marks a function view as a heavy read that may be served by the replica."""
    view.reads_replica = True
    return view


@contextmanager
def replica_reads(request=None):
    """Send the block's reads to the replica: heavy reads that change nothing, made where no view
    opted in (a replay is a POST, or a Celery task). Nothing changes when there is no replica, or,
    given the request, when it already wrote (its reads stay on the primary) or its user wrote a
    moment ago. Without a request (a task) the caller vouches that the block reads nothing it just
    wrote: a worker thread's routing state is never reset, so an earlier write does not count.
    A write inside the block pins the rest of it to the primary, as in a view."""
    if not replica_reads_enabled() or (request is not None and (_reads.get() == _PRIMARY or _recently_wrote(request))):
        yield
        return
    token = _reads.set(REPLICA)
    try:
        yield
    finally:
        _reads.reset(token)


def read_alias() -> str:
    """The connection the current request's reads go to (for work that outlives the view)."""
    if _reads.get() == REPLICA and not connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return REPLICA
    return DEFAULT_DB_ALIAS


class ReplicaRouter:
    def db_for_read(self, model, **hints):
        if model._meta.label_lower not in PRIMARY_ONLY and read_alias() == REPLICA:
            return REPLICA
        return DEFAULT_DB_ALIAS

    def db_for_write(self, model, **hints):
        if _reads.get() != _PRIMARY:
            _reads.set(_PRIMARY)  # the rest of this request, and this user for a few seconds, read the primary
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # the replica holds the same rows as the primary

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS  # a replica replays the primary's schema; never migrate it


def _api_sticky_key(request) -> str | None:
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    return "routing:primary:" + hashlib.sha256(header.encode()).hexdigest()


def _recently_wrote(request) -> bool:
    sticky = settings.REPLICA_STICKY_SECONDS
    if request.get_signed_cookie(STICKY_COOKIE, default=None, salt=_COOKIE_SALT, max_age=sticky):
        return True
    key = _api_sticky_key(request)
    # the cache down: read the primary, as after a write (never a stale replica)
    return bool(key and soft_get(key, None, use="replica stickiness", on_failure=True))


def _wants_replica(view_func) -> bool:
    if getattr(view_func, "reads_replica", False):
        return True
    view_class = getattr(view_func, "view_class", None) or getattr(view_func, "cls", None)
    return bool(getattr(view_class, "reads_replica", False))


class ReplicaRoutingMiddleware:
    """Opens and closes the per-request routing state and remembers who just wrote."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _reads.set(None)
        try:
            response = self.get_response(request)
            wrote = request.method not in _SAFE_METHODS or _reads.get() == _PRIMARY
        finally:
            _reads.reset(token)
        if wrote and replica_configured():
            sticky = settings.REPLICA_STICKY_SECONDS
            response.set_signed_cookie(
                STICKY_COOKIE,
                "1",
                salt=_COOKIE_SALT,
                max_age=sticky,
                httponly=True,
                samesite="Lax",
                secure=request.is_secure(),
            )
            key = _api_sticky_key(request)
            if key:
                soft_set(key, 1, sticky, use="replica stickiness")
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        if (
            request.method in _SAFE_METHODS
            and replica_reads_enabled()
            and _wants_replica(view_func)
            and not _recently_wrote(request)
        ):
            _reads.set(REPLICA)
