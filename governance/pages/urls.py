from django.contrib.auth import views as auth_views
from django.urls import include, path

from tenants.pages.oidc import SignInView
from tenants.pages.sessions import PasswordChangeView

from . import audit, overview, replay, runs, score_audit, violations

urlpatterns = [
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("", overview.overview, name="overview"),
    path("runs/", runs.run_list, name="run_list"),
    path("runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path("runs/<int:pk>/evidence.json", runs.run_evidence, name="run_evidence"),
    path("violations/", violations.violation_list, name="violation_list"),
    path("violations/counts/", violations.violation_state_counts, name="violation_state_counts"),
    path("violations/review/", violations.violation_bulk_review, name="violation_bulk_review"),
    path("violations/<int:pk>/", violations.violation_detail, name="violation_detail"),
    path("audit/", audit.audit_list, name="audit_list"),
    path("score-audit/", score_audit.score_audit_list, name="score_audit"),
    path("audit/export", audit.audit_export, name="audit_export"),
    path("evaluations/export", audit.evaluation_export, name="evaluation_export"),
    path("policies/try/", replay.policy_try, name="policy_try"),
    path("policies/<int:pk>/calibration/", replay.policy_calibration, name="policy_calibration"),
    path("policies/", include("policies.pages.urls")),
    path("settings/", include("tenants.pages.urls")),
]
