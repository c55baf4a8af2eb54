from django.urls import path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from core.api.errors import not_found
from judges import api as judges_api
from policies import api as policies_api
from tenants import api as tenants_api
from webhooks import api as webhooks_api

from . import evidence_pack, grounding, logs, ping, policies_as_code, replay, run_reads, runs, score_audit

urlpatterns = [
    path("ping/", ping.PingView.as_view(), name="api-ping"),
    path("policies/", policies_api.PolicyListView.as_view(), name="api-policies"),
    path("policies/replay/", replay.ReplayView.as_view(), name="api-policy-replay"),
    path("policies/plan/", policies_as_code.PolicyPlanView.as_view(), name="api-policy-plan"),
    path("policies/apply/", policies_as_code.PolicyApplyView.as_view(), name="api-policy-apply"),
    path("policies/replay/<int:pk>/", replay.ReplayJobView.as_view(), name="api-policy-replay-job"),
    path("policies/<int:pk>/", policies_api.PolicyDetailView.as_view(), name="api-policy"),
    path("policies/<int:pk>/calibration/", replay.CalibrationView.as_view(), name="api-policy-calibration"),
    path("policies/<int:pk>/rollback/", policies_api.PolicyRollbackView.as_view(), name="api-policy-rollback"),
    path("runs/", runs.RunListView.as_view(), name="api-runs"),
    path("runs/<int:pk>/", run_reads.RunDetailView.as_view(), name="api-run"),
    path("runs/<int:pk>/reports/", run_reads.RunReportListView.as_view(), name="api-run-reports"),
    path("runs/<int:pk>/evaluations/", run_reads.RunEvaluationListView.as_view(), name="api-run-evaluations"),
    path("runs/<int:pk>/grounding/", runs.RunGroundingView.as_view(), name="api-run-grounding"),
    path("runs/<int:pk>/spans/", runs.RunSpanView.as_view(), name="api-run-spans"),
    path("runs/<int:pk>/evidence/", evidence_pack.RunEvidenceView.as_view(), name="api-run-evidence"),
    path("runs/<int:pk>/complete/", runs.RunCompleteView.as_view(), name="api-run-complete"),
    path("evaluations/", logs.EvaluationListView.as_view(), name="api-evaluations"),
    path("evaluations/export", logs.EvaluationExportView.as_view(), name="api-evaluations-export"),
    path("audit-log/", logs.AuditLogListView.as_view(), name="api-audit-log"),
    path("audit-log/verify/", tenants_api.AuditVerifyView.as_view(), name="api-audit-log-verify"),
    path("audit-log/checkpoint/", tenants_api.AuditSignedCheckpointView.as_view(), name="api-audit-log-checkpoint"),
    path("audit-log/keys/", tenants_api.AuditKeysView.as_view(), name="api-audit-log-keys"),
    path("audit-log/export", logs.AuditLogExportView.as_view(), name="api-audit-log-export"),
    path("grounding/check/", judges_api.GroundingCheckView.as_view(), name="api-grounding-check"),
    path("grounding/decide/", grounding.GroundingDecideView.as_view(), name="api-grounding-decide"),
    path("secrets/", tenants_api.SecretListView.as_view(), name="api-secrets"),
    path("settings/score-audit/", score_audit.ScoreAuditRateView.as_view(), name="api-settings-score-audit"),
    path("settings/retention/", tenants_api.RetentionSettingsView.as_view(), name="api-settings-retention"),
    path("score-audit/", score_audit.ScoreAuditListView.as_view(), name="api-score-audit"),
    path(
        "agents/<path:agent_name>/score-audit/",
        score_audit.AgentScoreAuditView.as_view(),
        name="api-agent-score-audit",
    ),
    path("secrets/<str:name>/", tenants_api.SecretDetailView.as_view(), name="api-secret"),
    path("api-keys/", tenants_api.ApiKeyListView.as_view(), name="api-keys"),
    path("api-keys/<int:pk>/", tenants_api.ApiKeyDetailView.as_view(), name="api-key"),
    path("webhooks/", webhooks_api.WebhookListView.as_view(), name="api-webhooks"),
    path("webhooks/<int:pk>/", webhooks_api.WebhookDetailView.as_view(), name="api-webhook"),
    path("webhooks/<int:pk>/deliveries/", webhooks_api.DeliveryListView.as_view(), name="api-webhook-deliveries"),
    path(
        "webhooks/<int:pk>/deliveries/<int:delivery_pk>/redeliver/",
        webhooks_api.RedeliverView.as_view(),
        name="api-webhook-redeliver",
    ),
    path(
        "schema/policy-file.json",
        policies_as_code.PolicyFileSchemaView.as_view(),
        name="api-policy-file-schema",
    ),
    path("schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="api-schema"),
    path(
        "docs/",
        # The split view serves its start-up script from ?script, not inline: the CSP allows no inline
        # script (core.middleware), which left the one-page view blank.
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", authentication_classes=[], permission_classes=[]),
        name="api-docs",
    ),
    path(
        "redoc/",
        SpectacularRedocView.as_view(url_name="api-schema", authentication_classes=[], permission_classes=[]),
        name="api-redoc",
    ),
    # Last: whatever else is under /api/v1/ is a JSON 404, not Django's HTML page.
    re_path(r"", not_found, name="api-not-found"),
]
