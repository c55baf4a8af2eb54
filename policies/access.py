"""The tenant's policy or 404 (see `tenants.access` for why never 403)."""

from django.shortcuts import get_object_or_404

from core.lookup import pk_or_404
from tenants.models import Tenant

from .models import Policy


def policy_for(tenant: Tenant, pk) -> Policy:
    return get_object_or_404(Policy.objects.filter(tenant=tenant), pk=pk_or_404(pk))
