"""Bearer API-key authentication for the REST API. A key belongs to exactly one tenant."""

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from .models import ApiKey, hash_api_key

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
        key = ApiKey.objects.with_scopes_disabled().select_related("tenant").filter(key_hash=hash_api_key(raw)).first()
        if key is None or key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        now = timezone.now()
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
