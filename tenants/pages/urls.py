from django.urls import path

from . import invitations, retention, score_audit, views

urlpatterns = [
    path("tenant/", views.tenant_switch, name="tenant_switch"),
    path("secrets/", views.secrets, name="settings_secrets"),
    path("secrets/<str:name>/delete/", views.secret_delete, name="settings_secret_delete"),
    path("api-keys/", views.api_keys, name="settings_api_keys"),
    path("api-keys/<int:pk>/revoke/", views.api_key_revoke, name="settings_api_key_revoke"),
    path("members/", views.members, name="settings_members"),
    path("score-audit/", score_audit.score_audit_settings, name="settings_score_audit"),
    path("retention/", retention.retention_settings, name="settings_retention"),
    path("members/<int:pk>/role/", views.member_role, name="settings_member_role"),
    path("members/<int:pk>/remove/", views.member_remove, name="settings_member_remove"),
    path("members/invite/", invitations.invite, name="settings_member_invite"),
    path("members/invitations/<int:pk>/revoke/", invitations.invitation_revoke, name="settings_invitation_revoke"),
]
