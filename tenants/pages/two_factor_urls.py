"""Account pages: see tenants/pages/account_urls.py."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
