from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"

    def ready(self):
        # Imported for their side effects: the deployment checks register, the sign-in throttle's
        # and the session list's signal receivers connect.
        from . import checks, login_backends, user_sessions  # noqa: F401
