from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"

    def ready(self):
        from . import login_backends  # noqa: F401  (connects the sign-in throttle's signal receivers)
