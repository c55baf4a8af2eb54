from django.urls import path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from judges import api as judges_api
from policies import api as policies_api
from tenants import api as tenants_api

from . import grounding, logs, ping, runs, score_audit

urlpatterns = [
    path("ping/", ping.PingView.as_view(), name="api-ping"),
    path("policies/", policies_api.PolicyListView.as_view(), name="api-policies"),
    path("policies/<int:pk>/", policies_api.PolicyDetailView.as_view(), name="api-policy"),
    path("runs/", runs.RunListView.as_view(), name="api-runs"),
    path("runs/<int:pk>/", runs.RunDetailView.as_view(), name="api-run"),
    path("runs/<int:pk>/grounding/", runs.RunGroundingView.as_view(), name="api-run-grounding"),
    path("runs/<int:pk>/spans/", runs.RunSpanView.as_view(), name="api-run-spans"),
    path("runs/<int:pk>/complete/", runs.RunCompleteView.as_view(), name="api-run-complete"),
    path("evaluations/", logs.EvaluationListView.as_view(), name="api-evaluations"),
    path("evaluations/export", logs.EvaluationExportView.as_view(), name="api-evaluations-export"),
    path("audit-log/", logs.AuditLogListView.as_view(), name="api-audit-log"),
    path("audit-log/export", logs.AuditLogExportView.as_view(), name="api-audit-log-export"),
    path("grounding/check/", judges_api.GroundingCheckView.as_view(), name="api-grounding-check"),
    path("grounding/decide/", grounding.GroundingDecideView.as_view(), name="api-grounding-decide"),
    path("secrets/", tenants_api.SecretListView.as_view(), name="api-secrets"),
    path("settings/score-audit/", score_audit.ScoreAuditRateView.as_view(), name="api-settings-score-audit"),
    path("score-audit/", score_audit.ScoreAuditListView.as_view(), name="api-score-audit"),
    path(
        "agents/<path:agent_name>/score-audit/",
        score_audit.AgentScoreAuditView.as_view(),
        name="api-agent-score-audit",
    ),
    path("secrets/<str:name>/", tenants_api.SecretDetailView.as_view(), name="api-secret"),
    path("schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="api-schema"),
    path(
        "docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema", authentication_classes=[], permission_classes=[]),
        name="api-docs",
    ),
    path(
        "redoc/",
        SpectacularRedocView.as_view(url_name="api-schema", authentication_classes=[], permission_classes=[]),
        name="api-redoc",
    ),
]
