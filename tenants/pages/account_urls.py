"""Pages outside Settings: the first-workspace page and the page an invitation link opens."""

from django.urls import path

from . import invitations, welcome

urlpatterns = [
    path("welcome/", welcome.welcome, name="welcome"),
    path("invitations/<str:token>/", invitations.invitation_accept, name="invitation_accept"),
]
