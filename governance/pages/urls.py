from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import overview

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", overview.overview, name="overview"),
    path("policies/", include("policies.pages.urls")),
    path("settings/", include("tenants.pages.urls")),
]
