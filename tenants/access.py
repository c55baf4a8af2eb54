"""One helper per object type: the object if it belongs to the tenant, else 404.

Both the API and the pages use these. Another tenant's object is a 404, never a 403, so its
existence is not confirmed. The scoped managers are the safety net under this explicit filter.
"""

from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import ApiKey, Membership, Tenant, TenantSecret


def _pk(value) -> int:
    try:
        pk = int(value)
    except (TypeError, ValueError):
        raise Http404("Not found.")
    if pk <= 0 or pk > 2**63 - 1:
        raise Http404("Not found.")
    return pk


def policy_for(tenant: Tenant, pk):
    from policies.models import Policy

    return get_object_or_404(Policy.objects.filter(tenant=tenant), pk=_pk(pk))


def run_for(tenant: Tenant, pk, *, for_update: bool = False):
    from governance.models import Run

    qs = Run.objects.filter(tenant=tenant)
    if for_update:
        qs = qs.select_for_update()
    return get_object_or_404(qs, pk=_pk(pk))


def evaluation_for(tenant: Tenant, pk):
    from governance.models import Evaluation

    return get_object_or_404(Evaluation.objects.filter(tenant=tenant).select_related("run"), pk=_pk(pk))


def api_key_for(tenant: Tenant, pk) -> ApiKey:
    return get_object_or_404(ApiKey.objects.filter(tenant=tenant), pk=_pk(pk))


def secret_for(tenant: Tenant, name: str) -> TenantSecret:
    return get_object_or_404(TenantSecret.objects.filter(tenant=tenant), name=name)


def membership_for(tenant: Tenant, pk) -> Membership:
    return get_object_or_404(Membership.objects.filter(tenant=tenant).select_related("user"), pk=_pk(pk))
