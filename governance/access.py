"""The tenant's run or evaluation, or 404 (see `tenants.access` for why never 403)."""

from django.shortcuts import get_object_or_404

from core.lookup import pk_or_404
from tenants.models import Tenant

from .models import Evaluation, Run


def run_for(tenant: Tenant, pk, *, for_update: bool = False, only: tuple[str, ...] = (), owner_key_id=None) -> Run:
    """The tenant's run ``pk`` (404 otherwise); with ``owner_key_id``, only if that key started it."""
    qs = Run.objects.filter(tenant=tenant)
    if owner_key_id is not None:
        qs = qs.filter(api_key_id=owner_key_id)
    if for_update:
        qs = qs.select_for_update()
    if only:
        qs = qs.only(*only)
    return get_object_or_404(qs, pk=pk_or_404(pk))


def evaluation_for(tenant: Tenant, pk) -> Evaluation:
    return get_object_or_404(Evaluation.objects.filter(tenant=tenant).select_related("run"), pk=pk_or_404(pk))
