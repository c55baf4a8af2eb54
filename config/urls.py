from django.urls import include, path

from core.health import healthz, readyz
from core.metrics import metrics_view
from otlp.views import TracesView

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("v1/traces", TracesView.as_view(), name="otlp-traces"),
    path("api/v1/", include("governance.api.urls")),
    path("settings/webhooks/", include("webhooks.pages.urls")),
    path("", include("tenants.pages.account_urls")),
    path("", include("governance.pages.urls")),
]
