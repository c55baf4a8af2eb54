from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"

    def ready(self):
        # Imported for their side effects: the deployment checks register; the sign-in throttle's,
        # the second step's and the session list's signal receivers connect.
        from . import checks, login_backends, two_factor, user_sessions  # noqa: F401
