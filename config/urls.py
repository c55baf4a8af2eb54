from django.urls import include, path

from core.health import healthz, readyz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("api/v1/", include("governance.api.urls")),
    path("", include("governance.pages.urls")),
]
