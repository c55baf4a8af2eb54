from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"

    def ready(self):
        from django.core import checks

        from . import login_backends  # noqa: F401  (connects the sign-in throttle's signal receivers)
        from .sso import check_group_roles

        checks.register(check_group_roles)
