from django_scopes import scope
from rest_framework.views import APIView


class TenantAPIView(APIView):
    """An API view whose every query is scoped to the API key's tenant.

    The scope opens once authentication has found the tenant and closes when dispatch ends, even
    on an unhandled error, so a query that forgot its tenant filter still cannot see another
    tenant's rows and no scope outlives its request.
    """

    _tenant_scope = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self._tenant_scope = scope(tenant=request.tenant)
        self._tenant_scope.__enter__()

    def dispatch(self, request, *args, **kwargs):
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            cm, self._tenant_scope = self._tenant_scope, None
            if cm is not None:
                cm.__exit__(None, None, None)

    @property
    def tenant(self):
        return self.request.tenant
