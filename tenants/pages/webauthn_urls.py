"""Security keys and passkeys: see tenants/pages/webauthn.py (docs/security-keys.md)."""

from django.urls import path

from . import webauthn

urlpatterns = [
    path("account/security/keys/options/", webauthn.register_options, name="webauthn_register_options"),
    path("account/security/keys/", webauthn.register, name="webauthn_register"),
    path("account/security/keys/<int:pk>/remove/", webauthn.remove, name="webauthn_remove"),
    path("accounts/two-factor/webauthn/options/", webauthn.sign_in_options, name="webauthn_sign_in_options"),
    path("accounts/two-factor/webauthn/verify/", webauthn.sign_in_verify, name="webauthn_sign_in_verify"),
]
