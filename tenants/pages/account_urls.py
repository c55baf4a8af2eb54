"""Pages outside Settings: single sign-on, the first-workspace page and the page an invitation link opens."""

from django.urls import path

from . import invitations, oidc, welcome

urlpatterns = [
    path("accounts/oidc/login/", oidc.oidc_login, name="oidc_login"),
    path("accounts/oidc/callback/", oidc.oidc_callback, name="oidc_callback"),
    path("welcome/", welcome.welcome, name="welcome"),
    path("invitations/<str:token>/", invitations.invitation_accept, name="invitation_accept"),
]
