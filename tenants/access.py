"""One helper per object type: the object if it belongs to the tenant, else 404.

Both the API and the pages use these. Another tenant's object is a 404, never a 403, so its
existence is not confirmed. The scoped managers are the safety net under this explicit filter.
Each app keeps the helpers for its own objects (`policies.access`, `governance.access`).
"""

from django.http import Http404
from django.shortcuts import get_object_or_404

from core.lookup import pk_or_404

from .models import ApiKey, Invitation, Membership, Tenant, TenantSecret
from .services import is_secret_name


def api_key_for(tenant: Tenant, pk) -> ApiKey:
    return get_object_or_404(ApiKey.objects.filter(tenant=tenant), pk=pk_or_404(pk))


def secret_for(tenant: Tenant, name: str) -> TenantSecret:
    # A name no secret can have is not looked up: a NUL in it is an error in PostgreSQL, not a miss.
    if not is_secret_name(name):
        raise Http404("No such secret.")
    return get_object_or_404(TenantSecret.objects.filter(tenant=tenant), name=name)


def membership_for(tenant: Tenant, pk) -> Membership:
    return get_object_or_404(Membership.objects.filter(tenant=tenant).select_related("user"), pk=pk_or_404(pk))


def invitation_for(tenant: Tenant, pk) -> Invitation:
    return get_object_or_404(Invitation.objects.filter(tenant=tenant), pk=pk_or_404(pk))
