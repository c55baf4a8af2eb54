"""Bearer API-key authentication for the REST API, and what a key's scope lets it do.

A key belongs to exactly one tenant. Every API view says what it needs in one attribute,
``required_scope`` (a scope, or a dict of HTTP method to scope); :class:`HasScope`, the default
permission class (settings.REST_FRAMEWORK), is the only place that compares it with the key.
"""

from datetime import timedelta
from functools import lru_cache

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from core.patterns import name_matches
from core.prepared import prepared_cursor

from .models import ApiKey, KeyScope, Tenant, hash_api_key

# last_used_at is informational; writing it on every request would double the writes of hot paths.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class ApiKeyPrincipal:
    """What `request.user` is for an API call: the key, speaking for its tenant."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    def __init__(self, api_key: ApiKey):
        self.api_key = api_key
        self.tenant = api_key.tenant

    def get_username(self) -> str:
        return f"api-key:{self.api_key.prefix}"

    def __str__(self) -> str:
        return self.get_username()


@lru_cache(maxsize=1)
def _key_sql() -> str:
    qn = connection.ops.quote_name
    columns = [f"k.{qn(f.column)}" for f in ApiKey._meta.concrete_fields]
    columns += [f"t.{qn(f.column)}" for f in Tenant._meta.concrete_fields]
    return (
        f"SELECT {', '.join(columns)} FROM {qn(ApiKey._meta.db_table)} k "
        f"JOIN {qn(Tenant._meta.db_table)} t ON t.{qn('id')} = k.{qn(ApiKey._meta.get_field('tenant').column)} "
        f"WHERE k.{qn(ApiKey._meta.get_field('key_hash').column)} = %s"
    )


def _key_with_tenant(key_hash: str) -> ApiKey | None:
    """The key with this hash, its tenant loaded (the policy caches compare the tenant's generation).

    Every API request reads it. On PostgreSQL it is one prepared statement giving the same model
    instances as the ORM's ``select_related`` query, whose compilation in Python was about two thirds
    of ``GET /api/v1/ping/``'s CPU (1.1 ms of 1.5 ms, measured in process). Always on the primary,
    as the router sends this table (core.routing.PRIMARY_ONLY): a revoked key stops at once.
    """
    if connection.vendor != "postgresql":
        return ApiKey.objects.with_scopes_disabled().select_related("tenant").filter(key_hash=key_hash).first()
    with prepared_cursor() as cursor:
        cursor.execute(_key_sql(), [key_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(ApiKey._meta.concrete_fields)
    key = _from_row(ApiKey, row[:split])
    key.tenant = _from_row(Tenant, row[split:])
    return key


@lru_cache(maxsize=2)
def _converters(model) -> tuple[tuple, ...]:
    """Per column of ``model``, what the ORM's compiler applies to its value (the backend's converters
    and the field's ``from_db_value``, such as a JSON column's decoding)."""
    return tuple(
        (*connection.ops.get_db_converters(field.get_col(model._meta.db_table)), *field.get_db_converters(connection))
        for field in model._meta.concrete_fields
    )


def _from_row(model, values):
    """``model`` from its columns' values, converted as the ORM converts them."""
    fields = model._meta.concrete_fields
    converted = []
    for field, value, converters in zip(fields, values, _converters(model), strict=True):
        for convert in converters:
            value = convert(value, field, connection)
        converted.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header:
            return None
        if header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: use 'Bearer <api key>'.")
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid API key.") from None
        key = _key_with_tenant(hash_api_key(raw))
        if key is None or key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        now = timezone.now()
        if key.expires_at is not None and key.expires_at <= now:
            raise exceptions.AuthenticationFailed("This API key has expired; create a new one.")
        if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.with_scopes_disabled().filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        django_request = request._request
        django_request.tenant = request.tenant = key.tenant
        django_request.api_key = request.api_key = key
        return ApiKeyPrincipal(key), key

    def authenticate_header(self, request):
        # Makes DRF answer 401 (not 403) when no credentials were sent.
        return 'Bearer realm="api"'


class HasTenant(permissions.BasePermission):
    message = "Authentication credentials were not provided."

    def has_permission(self, request, view):
        return isinstance(request.auth, ApiKey)


#: ``required_scope`` for endpoints every key may call (ping).
ANY_SCOPE = "any"


def required_scope(view, method: str) -> str:
    """The scope ``view`` needs for ``method``. A view that declares nothing needs ``admin``:
    a new endpoint someone forgot to mark fails closed, not open."""
    declared = getattr(view, "required_scope", None)
    if isinstance(declared, dict):
        method = method.upper()
        declared = declared.get("GET" if method in ("HEAD", "OPTIONS") else method)
    return declared or KeyScope.ADMIN


class HasScope(HasTenant):
    """A key of this tenant whose scope covers what the view needs (a 403 naming the scope otherwise).

    * ``admin`` and ``legacy`` keys may do everything;
    * ``read`` keys every endpoint marked ``read``;
    * ``agent`` keys every endpoint marked ``agent``, and the ``read`` endpoints of views that set
      ``agent_reads_own = True`` (runs): those views show an agent key only the runs it started.
      A view with ``key_owns(key, **kwargs)`` (one run) is a 404 for a run the key did not start,
      as another tenant's run would be. A key pinned to agent names may only name those agents in
      the view's ``agent_name_field``.
    """

    def has_permission(self, request, view):
        if not super().has_permission(request, view):
            return False
        key: ApiKey = request.auth
        needed = required_scope(view, request.method)
        if needed == ANY_SCOPE or key.full_rights:
            return True
        if key.scope == KeyScope.READ:
            if needed == KeyScope.READ:
                return True
        elif key.scope == KeyScope.AGENT:
            if needed == KeyScope.AGENT or (needed == KeyScope.READ and getattr(view, "agent_reads_own", False)):
                self._check_agent_key(request, view, key)
                return True
        raise exceptions.PermissionDenied(
            f"This needs an API key with the {needed} scope; this key has the {key.scope} scope."
        )

    @staticmethod
    def _check_agent_key(request, view, key: ApiKey) -> None:
        owns = getattr(view, "key_owns", None)
        if owns is not None and view.kwargs and not owns(key, **view.kwargs):
            raise exceptions.NotFound()
        field = getattr(view, "agent_name_field", None)
        if key.agents and field and request.method not in permissions.SAFE_METHODS:
            data = request.data
            name = data.get(field) if isinstance(data, dict) else None
            # A missing or malformed name is the serializer's 400; only a wrong one is refused here.
            # Checked as the serializers keep it (trimmed, as DRF's CharField does): " admin" passed a
            # pin "[!a]*" as sent, then ran as agent "admin".
            if isinstance(name, str) and not name_matches(key.agents, name.strip()):
                raise exceptions.PermissionDenied(
                    f"This API key may only act for agents matching: {', '.join(key.agents)}."
                )
