"""Tenant secrets and API keys over the API (admin scope).

A secret's value is never returned; a key's raw value only once, in the answer that created it.
"""

from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core import signing_keys
from core.api.base import JSONOnlyNegotiation, JSONRenderer, TenantAPIView
from core.api.contract import known_query, represented, represented_list, validated
from core.api.fields import StrictCharField, StrictIntegerField, StrictSerializer
from core.api.schema import GroundruleAutoSchema
from tenants.audit import Actor, audit_chain_verify, audit_checkpoint_latest

from . import services, signed_checkpoints
from .access import api_key_for, secret_for
from .models import GRANTABLE_SCOPES, MAX_RETENTION_DAYS, ApiKey, KeyScope, TenantSecret


class SecretOut(serializers.ModelSerializer):
    class Meta:
        model = TenantSecret
        fields = ["name", "hint", "created_at", "updated_at"]
        read_only_fields = fields


class SecretListOut(serializers.Serializer):
    """Every secret of the tenant, by name: a short list, so not paginated."""

    results = SecretOut(many=True)


class SecretIn(StrictSerializer):
    value = StrictCharField(trim_whitespace=False, max_length=services.MAX_SECRET_BYTES)


class SecretListView(TenantAPIView):
    required_scope = KeyScope.ADMIN
    error_statuses = {"get": (400,)}  # an unknown query parameter

    @extend_schema(responses=SecretListOut)
    def get(self, request):
        known_query(request, ())  # not paginated: a `cursor` or `page_size` must not look honoured
        secrets = TenantSecret.objects.filter(tenant=self.tenant).order_by("name")
        return Response({"results": represented_list(SecretOut, secrets)})


SECRET_NAME = OpenApiParameter(
    "name",
    str,
    OpenApiParameter.PATH,
    pattern=f"^{services.SECRET_NAME_RE.pattern}$",
    description="An environment-variable style name: A-Z, 0-9 and _, starting with a letter, at most 64.",
)


class SecretDetailView(TenantAPIView):
    required_scope = KeyScope.ADMIN

    @extend_schema(request=SecretIn, responses={200: SecretOut, 201: SecretOut}, parameters=[SECRET_NAME])
    def put(self, request, name: str):
        data = validated(SecretIn, request.data)
        services.validate_secret_name(name)
        existed = TenantSecret.objects.filter(tenant=self.tenant, name=name).exists()
        secret = services.secret_set(
            tenant=self.tenant, name=name, value=data["value"], actor=Actor.from_request(request)
        )
        answer = status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        return Response(represented(SecretOut, secret), status=answer)

    @extend_schema(responses={204: None}, parameters=[SECRET_NAME])
    def delete(self, request, name: str):
        services.secret_delete(secret=secret_for(self.tenant, name), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _retention_days_field(what: str):
    return StrictIntegerField(
        allow_null=True,
        min_value=1,
        max_value=MAX_RETENTION_DAYS,
        help_text=f"Days of {what} to keep; null keeps everything.",
    )


class RetentionIn(StrictSerializer):
    retention_days = _retention_days_field("run data (runs, reports, spans, decisions, evaluations)")
    audit_retention_days = _retention_days_field("audit log")


class RetentionOut(serializers.Serializer):
    retention_days = serializers.IntegerField(allow_null=True)
    audit_retention_days = serializers.IntegerField(allow_null=True)


def _retention(tenant) -> dict:
    return {"retention_days": tenant.retention_days, "audit_retention_days": tenant.audit_retention_days}


class RetentionSettingsView(TenantAPIView):
    """The tenant's retention (docs/retention.md): applied by the daily pass, not on save."""

    required_scope = {"GET": KeyScope.READ, "PUT": KeyScope.ADMIN}

    @extend_schema(responses=RetentionOut)
    def get(self, request):
        return Response(_retention(self.tenant))

    @extend_schema(request=RetentionIn, responses=RetentionOut)
    def put(self, request):
        data = RetentionIn(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = services.tenant_set_retention(
            tenant=self.tenant, actor=Actor.from_request(request), **data.validated_data
        )
        return Response(_retention(tenant))


class AuditCheckpointOut(serializers.Serializer):
    seq = serializers.IntegerField(help_text="The last row retention removed; the chain resumes at seq + 1.")
    hash = serializers.CharField(help_text="That row's hash: the prev_hash of the first row kept.")
    removed = serializers.IntegerField(help_text="Rows this checkpoint let go.")
    before = serializers.DateTimeField(help_text="The retention cutoff: rows created before it went.")
    created_at = serializers.DateTimeField()


class AuditVerifyOut(serializers.Serializer):
    ok = serializers.BooleanField()
    checked = serializers.IntegerField()
    first_broken = serializers.IntegerField(allow_null=True, help_text="The id of the first row that fails.")
    problem = serializers.CharField(help_text="What is wrong with that row; empty when ok.")
    checkpoint = AuditCheckpointOut(
        allow_null=True, help_text="Where the chain starts after retention pruned it; null when never pruned."
    )


class PatternField(StrictCharField):
    """A string the pattern describes: the schema says so, and the service names the field otherwise."""

    def __init__(self, pattern, message: str, **kwargs):
        super().__init__(**kwargs)
        self.validators.append(RegexValidator(pattern, message=message))


class SignedCheckpointIn(StrictSerializer):
    """A signed checkpoint as GET /api/v1/audit-log/checkpoint/ gave it (or as published)."""

    tenant = StrictCharField(max_length=63, help_text="The slug of the tenant whose chain it signs.")
    seq = StrictIntegerField(min_value=0, max_value=2**63 - 1)
    hash = PatternField(signed_checkpoints.HASH, signed_checkpoints.HASH_MESSAGE)
    signed_at = PatternField(
        signed_checkpoints.SIGNED_AT, signed_checkpoints.SIGNED_AT_MESSAGE, help_text="UTC, YYYY-MM-DDTHH:MM:SSZ."
    )
    key_id = PatternField(signing_keys.KEY_ID, "Must be a key id: letters, digits, '.', '_' or '-', at most 64.")
    signature = PatternField(
        signed_checkpoints.SIGNATURE,
        signed_checkpoints.SIGNATURE_MESSAGE,
        help_text="Base64 of the 64-byte Ed25519 signature.",
    )


class SignedCheckpointOut(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    seq = serializers.IntegerField(help_text="The seq of the chain's newest row (0: an empty chain).")
    hash = serializers.CharField(help_text="That row's hash (64 zeros for an empty chain).")
    signed_at = serializers.CharField(help_text="When it was signed, UTC, YYYY-MM-DDTHH:MM:SSZ.")
    key_id = serializers.CharField(help_text="The id of the key that signed it (GET /api/v1/audit-log/keys/).")
    signature = serializers.CharField(
        help_text="Base64 Ed25519 signature of the UTF-8 lines 'groundrule-audit-checkpoint/1', 'tenant <slug>', "
        "'seq <seq>', 'hash <hash>', 'signed_at <signed_at>', each ending in a line feed (docs/security.md)."
    )


class AuditVerifyView(TenantAPIView):
    required_scope = KeyScope.READ

    def _answer(self, verdict):
        checkpoint = audit_checkpoint_latest(tenant=self.tenant)
        return Response(
            {
                "ok": verdict.ok,
                "checked": verdict.checked,
                "first_broken": verdict.first_broken,
                "problem": verdict.problem,
                "checkpoint": AuditCheckpointOut(checkpoint).data if checkpoint is not None else None,
            }
        )

    @extend_schema(
        responses=AuditVerifyOut,
        description="Recompute the tenant's audit hash chain: is every row as it was written? The rows and the "
        "head are in the database: a rewrite that recomputed every later hash and the head passes this "
        "check; POST a signed checkpoint to catch it.",
    )
    def get(self, request):
        return self._answer(audit_chain_verify(tenant=self.tenant))

    @extend_schema(
        request=SignedCheckpointIn,
        responses=AuditVerifyOut,
        description="Recompute the chain and check that it still leads to a signed checkpoint held outside the "
        "database: `ok` is false, naming the row at the checkpoint's seq, when it does not. A checkpoint "
        "whose signature does not verify, whose key is unknown or that is another tenant's is a 400.",
    )
    def post(self, request):
        data = validated(SignedCheckpointIn, request.data)
        expect = signed_checkpoints.checkpoints_check([data], tenant=self.tenant)
        return self._answer(audit_chain_verify(tenant=self.tenant, expect=expect))


class AuditSignedCheckpointView(TenantAPIView):
    required_scope = KeyScope.READ
    error_statuses = {"get": (503,)}

    @extend_schema(
        responses={200: SignedCheckpointOut},
        description="The tenant's audit head (seq and hash), signed now with the deployment's Ed25519 key. Keep "
        "it outside this server: verified later (POST /api/v1/audit-log/verify/), it shows whether the rows "
        "up to it were rewritten since.",
    )
    def get(self, request):
        try:
            signed = signed_checkpoints.checkpoint_sign(tenant=self.tenant)
        except signed_checkpoints.SigningUnavailable as exc:
            return Response({"detail": str(exc), "request_id": request.request_id}, status=503)
        return Response(represented(SignedCheckpointOut, signed), headers={"Cache-Control": "no-store"})


class AuditKeyOut(serializers.Serializer):
    key_id = serializers.CharField()
    algorithm = serializers.ChoiceField(choices=["ed25519"])
    public_key = serializers.CharField(help_text="Base64 of the 32-byte Ed25519 public key.")
    active = serializers.BooleanField(help_text="Whether new checkpoints are signed with it.")


class AuditKeysOut(serializers.Serializer):
    keys = AuditKeyOut(many=True)


class AuditKeysView(APIView):
    """Public keys are public: no API key needed, so an auditor outside any tenant can fetch them."""

    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []
    content_negotiation_class = JSONOnlyNegotiation
    renderer_classes = [JSONRenderer]
    schema = GroundruleAutoSchema()
    required_scope = "any"

    @extend_schema(
        auth=[],
        responses=AuditKeysOut,
        description="The Ed25519 public keys audit checkpoints are signed with, by key id; retired keys stay "
        "listed (not active) so that what they signed still verifies.",
    )
    def get(self, request):
        return Response({"keys": signed_checkpoints.public_keys()})


class ApiKeyOut(serializers.ModelSerializer):
    prefix = serializers.CharField(source="masked")

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "scope", "agents", "expires_at", "last_used_at", "created_at", "revoked_at"]
        read_only_fields = fields  # an answer: every field is always there (null where unset)


class ApiKeyCreatedOut(ApiKeyOut):
    key = serializers.CharField(help_text="The raw API key. Shown in this response only.")

    class Meta(ApiKeyOut.Meta):
        fields = [*ApiKeyOut.Meta.fields, "key"]
        read_only_fields = fields


class ApiKeyListOut(serializers.Serializer):
    """Every key of the tenant, revoked ones last: a short list, so not paginated."""

    results = ApiKeyOut(many=True)


class ApiKeyIn(StrictSerializer):
    name = StrictCharField(max_length=100)
    scope = serializers.ChoiceField(choices=[str(s) for s in GRANTABLE_SCOPES], default=KeyScope.AGENT.value)
    agents = serializers.ListField(
        # Trimmed, so one that is only whitespace is blank: the pattern tells the schema.
        child=StrictCharField(
            max_length=services.MAX_KEY_AGENT_LENGTH,
            validators=[RegexValidator(r"\S", message="This field may not be blank.")],
        ),
        required=False,
        default=list,
        max_length=services.MAX_KEY_AGENTS,
    )
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=services.MAX_KEY_EXPIRY_DAYS
    )


class ApiKeyListView(TenantAPIView):
    """Keys with their scope, pinned agents, expiry and last use. Creating one answers the raw key once."""

    required_scope = KeyScope.ADMIN
    error_statuses = {"get": (400,)}  # an unknown query parameter

    @extend_schema(responses=ApiKeyListOut)
    def get(self, request):
        known_query(request, ())  # not paginated, as for secrets
        keys = ApiKey.objects.filter(tenant=self.tenant).order_by("revoked_at", "-created_at")
        return Response({"results": ApiKeyOut(keys, many=True).data})

    @extend_schema(request=ApiKeyIn, responses={201: ApiKeyCreatedOut})
    def post(self, request):
        serializer = ApiKeyIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        key, raw = services.api_key_create(
            tenant=self.tenant, actor=Actor.from_request(request), **serializer.validated_data
        )
        key.key = raw  # shown once: the schema's ApiKeyCreatedOut, and no cache may keep it
        return Response(
            represented(ApiKeyCreatedOut, key), status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"}
        )


class ApiKeyDetailView(TenantAPIView):
    required_scope = KeyScope.ADMIN

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.api_key_revoke(key=api_key_for(self.tenant, pk), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
