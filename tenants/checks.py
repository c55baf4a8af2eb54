"""Deployment checks (`manage.py check --deploy`) for what the settings cannot refuse at start."""

from django.conf import settings
from django.core.checks import Warning, register


@register(deploy=True)
def audit_signing_key(app_configs=None, **kwargs):
    if settings.AUDIT_KEYS.signer is not None:
        return []
    return [
        Warning(
            "AUDIT_SIGNING_KEYS is not set: audit checkpoints are not signed or published, so a rewrite of the "
            "audit log from inside the database goes unnoticed (docs/security.md).",
            hint="Generate a key with `manage.py audit_signing_key generate` and set AUDIT_SIGNING_KEYS.",
            id="groundrule.W001",
        )
    ]


@register()
def oidc_group_roles(app_configs=None, **kwargs):
    """A mistyped OIDC_GROUP_ROLES grant stops the server at start, not a person at sign-in."""
    from .sso import check_group_roles

    return check_group_roles()
