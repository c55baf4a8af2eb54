"""Pages outside Settings: single sign-on, the first-workspace page and the page an invitation link opens."""

from django.urls import include, path

from . import account, invitations, oidc, reauthenticate, welcome

urlpatterns = [
    # A person's own account: second factors and sessions (docs/two-factor.md, docs/sign-in.md).
    path("account/security/", account.security, name="account_security"),
    path("account/confirm/", reauthenticate.confirm, name="account_confirm"),
    path("", include("tenants.pages.two_factor_urls")),
    path("", include("tenants.pages.webauthn_urls")),
    path("", include("tenants.pages.session_urls")),
    path("accounts/oidc/login/", oidc.oidc_login, name="oidc_login"),
    path("accounts/oidc/callback/", oidc.oidc_callback, name="oidc_callback"),
    path("welcome/", welcome.welcome, name="welcome"),
    path("invitations/<str:token>/", invitations.invitation_accept, name="invitation_accept"),
]
