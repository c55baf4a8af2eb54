from django.urls import include, path

from core.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("governance.api.urls")),
    path("", include("governance.pages.urls")),
]
