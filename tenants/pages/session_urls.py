"""Account pages: see tenants/pages/account_urls.py."""

from django.urls import path

from . import sessions

urlpatterns = [
    path("account/sessions/<int:session_id>/end/", sessions.session_end, name="session_end"),
    path("account/sessions/end-others/", sessions.sessions_end_others, name="sessions_end_others"),
]
