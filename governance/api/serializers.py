"""The runs API's bodies: strict inputs (``...In``) and the outputs every answer goes through (``...Out``)."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from core.api.contract import represented_rows
from core.api.fields import (
    JSONObjectField,
    SafeJSONField,
    StrictCharField,
    StrictSerializer,
    UnitScoreField,
)
from governance.accumulated import Accumulated, accumulate
from governance.models import Action, Evaluation, GroundingReport, Phase, Run, Span, joined_sources
from policies.categories.grounding_context import MODES, WHEN_AVAILABLE
from tenants.models import AuditEvent

from .evidence import CitationField, provenance_errors

MAX_ITEMS = 1000


class RunStartIn(StrictSerializer):
    agent_name = StrictCharField(max_length=200)
    workflow_name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    input = SafeJSONField(required=False, allow_null=True, default=None)
    metadata = JSONObjectField(required=False, default=dict)


class SourceIn(StrictSerializer):
    id = StrictCharField(max_length=500)
    text = StrictCharField(max_length=100_000, required=False, allow_blank=True, default="")
    score = UnitScoreField(required=False, allow_null=True, default=None)


class GroundingIn(StrictSerializer):
    grounding_scores = serializers.ListField(child=UnitScoreField(), required=False, default=list, max_length=10_000)
    # Strings, or {"source_id", "quote"?} objects (the citation contract (docs/citations.md)).
    citations = serializers.ListField(child=CitationField(), required=False, default=list, max_length=MAX_ITEMS)
    unsupported_claims = serializers.ListField(
        child=StrictCharField(max_length=5000), required=False, default=list, max_length=MAX_ITEMS
    )
    output_confidence = UnitScoreField(required=False, allow_null=True, default=None)
    output = StrictCharField(required=False, allow_blank=True, default="", max_length=200_000)
    sources = serializers.ListField(child=SourceIn(), required=False, default=list, max_length=MAX_ITEMS)


SPAN_ID_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9._:-]{1,64}$", "Must be 1 to 64 letters, digits or . _ : - (e.g. 16 hex digits)."
)


class SpanIn(StrictSerializer):
    kind = serializers.ChoiceField(
        choices=Span.Kind.choices, error_messages={"invalid_choice": "Must be one of: tool, llm, retrieval."}
    )
    name = StrictCharField(max_length=200)
    input = SafeJSONField(required=False, allow_null=True, default=None)
    output = SafeJSONField(required=False, allow_null=True, default=None)
    started_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    ended_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    attributes = JSONObjectField(required=False, default=dict)
    # The sender's ids for nesting (OpenTelemetry's are 16 hex digits); the server makes a span_id
    # when none is sent. The parent may be recorded later: children usually end first.
    span_id = StrictCharField(required=False, max_length=64, validators=[SPAN_ID_VALIDATOR])
    parent_span_id = StrictCharField(
        required=False, allow_null=True, default=None, max_length=64, validators=[SPAN_ID_VALIDATOR]
    )

    def validate(self, attrs):
        start, end = attrs.get("started_at"), attrs.get("ended_at")
        if start and end and end < start:
            raise serializers.ValidationError({"ended_at": ["Must not be before started_at."]})
        if attrs.get("parent_span_id") and attrs.get("parent_span_id") == attrs.get("span_id"):
            raise serializers.ValidationError({"parent_span_id": ["Must not be the span's own span_id."]})
        errors = provenance_errors(attrs["kind"], attrs.get("attributes") or {})
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class CompleteIn(StrictSerializer):
    result = SafeJSONField(required=False, allow_null=True, default=None)
    output = StrictCharField(required=False, allow_blank=True, default="", max_length=200_000)
    error = StrictCharField(required=False, allow_blank=True, allow_null=True, default="", max_length=20_000)


class EvaluationOut(serializers.ModelSerializer):
    run_id = serializers.IntegerField(read_only=True)
    policy_id = serializers.IntegerField(source="policy_ref", allow_null=True, read_only=True)

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "run_id",
            "policy_id",
            "policy_name",
            "policy_version",
            "category",
            "agent_name",
            "phase",
            "action",
            "reason",
            "metadata",
            "source",
            "shadow",
            "created_at",
            "review_state",
            "reviewed_at",
            "review_comment",
        ]
        read_only_fields = fields


class SpanOut(serializers.ModelSerializer):
    class Meta:
        model = Span
        fields = [
            "id",
            "span_id",
            "parent_span_id",
            "kind",
            "name",
            "input",
            "output",
            "started_at",
            "ended_at",
            "attributes",
            "created_at",
        ]
        read_only_fields = fields


class ReportOut(serializers.ModelSerializer):
    # As reported: {"id", "text", "score"?, "span_id"?}; texts are stored once per run (RunSource).
    sources = serializers.ListField(child=serializers.DictField(), read_only=True)

    class Meta:
        model = GroundingReport
        fields = [
            "id",
            "seq",
            "grounding_scores",
            "citations",
            "unsupported_claims",
            "output_confidence",
            "output",
            "sources",
            "created_at",
        ]
        read_only_fields = fields


class RunOut(serializers.ModelSerializer):
    duration_ms = serializers.IntegerField(read_only=True, allow_null=True)
    worst_score = serializers.FloatField(
        read_only=True, allow_null=True, help_text="The lowest of the reports' best grounding scores."
    )
    judge_cost = serializers.FloatField(read_only=True, help_text="Estimated USD of the judges' LLM calls for the run.")

    class Meta:
        model = Run
        fields = [
            "id",
            "agent_name",
            "workflow_name",
            "status",
            "final_action",
            "started_at",
            "ended_at",
            "duration_ms",
            "metadata",
            "report_count",
            "worst_score",
            "judge_cost",
        ]
        read_only_fields = fields


class _ReportColumns(serializers.ModelSerializer):
    """What `report_rows` reads of each report: ReportOut's columns, with the sources as stored."""

    class Meta:
        model = GroundingReport
        # ReportOut's fields, the sources as stored (`source_refs`) in their place.
        fields = ["source_refs" if name == "sources" else name for name in ReportOut.Meta.fields]
        read_only_fields = fields


def report_rows(run: Run) -> list[dict]:
    """Every report of the run as ReportOut gives them, in seq order, for the deprecated whole body
    (`?expand=all`), read as rows (`represented_rows`)."""
    queryset = GroundingReport.objects.filter(run=run).order_by("seq")
    rows = represented_rows(_ReportColumns, queryset)
    sources = joined_sources([(run.pk, row["source_refs"]) for row in rows])
    names = ReportOut.Meta.fields
    return [
        {name: joined if name == "sources" else row[name] for name in names}
        for row, joined in zip(rows, sources, strict=True)
    ]


def evaluations_of(run: Run) -> list[dict]:
    """Every evaluation of the run as EvaluationOut gives them, in id order, for the deprecated whole
    body (`?expand=all`)."""
    return represented_rows(EvaluationOut, run.evaluations.order_by("id"))


class RunCountsOut(serializers.Serializer):
    reports = serializers.IntegerField()
    evaluations = serializers.IntegerField()
    violations = serializers.IntegerField(help_text="Enforced evaluations that warned or blocked.")
    spans = serializers.IntegerField()


class LatestDecisionOut(serializers.Serializer):
    id = serializers.IntegerField()
    phase = serializers.CharField()
    action = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    abstention_response = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    evaluations = EvaluationOut(many=True)


class RunSummaryOut(RunOut):
    """One run, bounded however long it ran: its counts and latest decision; its reports,
    evaluations and spans are the paginated lists beside it."""

    counts = serializers.SerializerMethodField()
    latest_decision = serializers.SerializerMethodField()

    class Meta(RunOut.Meta):
        fields = RunOut.Meta.fields + ["input", "result", "output", "error", "counts", "latest_decision"]
        read_only_fields = fields

    @extend_schema_field(RunCountsOut)
    def get_counts(self, run) -> dict:
        return run.counts

    @extend_schema_field(LatestDecisionOut(allow_null=True))
    def get_latest_decision(self, run) -> dict | None:
        return run.latest_decision


class RunDetailOut(RunOut):
    evaluations = serializers.SerializerMethodField()
    # What after_workflow audits, added up from the run's reports.
    citations = serializers.SerializerMethodField()
    unsupported_claims = serializers.SerializerMethodField()
    output_confidence = serializers.SerializerMethodField()
    spans = SpanOut(many=True, read_only=True)
    reports = serializers.SerializerMethodField()

    class Meta(RunOut.Meta):
        fields = RunOut.Meta.fields + [
            "input",
            "result",
            "output",
            "error",
            "citations",
            "unsupported_claims",
            "output_confidence",
            "reports",
            "spans",
            "evaluations",
        ]
        read_only_fields = fields

    @staticmethod
    def _reports(run) -> list[dict]:
        # Read once per answer: the report list and the three sums below share it.
        if getattr(run, "_report_rows", None) is None:
            run._report_rows = report_rows(run)
        return run._report_rows

    def _accumulated(self, run) -> Accumulated:
        return accumulate((r["citations"], r["unsupported_claims"], r["output_confidence"]) for r in self._reports(run))

    @extend_schema_field(ReportOut(many=True))
    def get_reports(self, run) -> list[dict]:
        return self._reports(run)

    @extend_schema_field(EvaluationOut(many=True))
    def get_evaluations(self, run) -> list[dict]:
        # A long run holds hundreds of evaluations: read as rows, not model instances.
        return evaluations_of(run)

    @extend_schema_field(serializers.ListField(child=serializers.JSONField()))
    def get_citations(self, run) -> list:
        return self._accumulated(run).citations

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_unsupported_claims(self, run) -> list[str]:
        return self._accumulated(run).unsupported_claims

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_output_confidence(self, run) -> float | None:
        return self._accumulated(run).output_confidence


class AuditEventOut(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_label", read_only=True)
    tenant_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "action",
            "actor",
            "request_id",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
            "tenant_id",
            "seq",
            "prev_hash",
            "hash",
        ]
        read_only_fields = fields


# --- Decisions: what run start, grounding reports and complete answer --------------------------


class DecisionEvaluationOut(serializers.Serializer):
    """One policy's verdict inside a decision, as the engine or a judge gave it."""

    policy_id = serializers.IntegerField(allow_null=True)
    policy_name = serializers.CharField()
    category = serializers.CharField()
    phase = serializers.ChoiceField(choices=Phase.choices)
    action = serializers.ChoiceField(choices=Action.choices)
    reason = serializers.CharField()
    metadata = serializers.DictField()
    source = serializers.ChoiceField(
        choices=Evaluation.Source.choices,
        required=False,
        help_text="Where the verdict came from; absent means `engine`.",
    )
    shadow = serializers.BooleanField(
        required=False, help_text="True on a shadow policy's verdict, which never counts in the decision."
    )


class DecisionOut(serializers.Serializer):
    """A decision: the combined action of every applicable policy at one phase. A block is a normal 200.

    Answers are what this serializer declares: a key the engine adds to ``Decision.to_dict()``
    reaches clients (and the schema) once it is declared here too.
    """

    action = serializers.ChoiceField(choices=Action.choices)
    phase = serializers.ChoiceField(choices=Phase.choices)
    reason = serializers.CharField()
    abstention_response = serializers.CharField(
        required=False, help_text="What to show instead of the answer; only on a block whose policy sets one."
    )
    evaluations = DecisionEvaluationOut(many=True)
    shadow_evaluations = DecisionEvaluationOut(
        many=True,
        required=False,
        help_text="What shadow-mode policies said (each with `shadow: true`); present only when one applied. "
        "They never change `action`, `reason` or `abstention_response`.",
    )


class ContextRulesOut(serializers.Serializer):
    context_mode = serializers.ChoiceField(choices=MODES)
    canonical_when_available = serializers.ChoiceField(choices=WHEN_AVAILABLE)
    include_retrieved_text = serializers.BooleanField(allow_null=True)
    max_context_chars = serializers.IntegerField(allow_null=True, min_value=1)


class GroundingContextOut(serializers.Serializer):
    """The context rules that apply to the agent, and the policy they come from (null: the defaults)."""

    policy_id = serializers.IntegerField(allow_null=True)
    policy_name = serializers.CharField(allow_null=True)
    rules = ContextRulesOut()


class StartDecisionOut(DecisionOut):
    grounding_context = GroundingContextOut()


class RunDecisionOut(serializers.Serializer):
    """The answer to a grounding report or a completion."""

    run_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Run.Status.choices)
    decision = DecisionOut()


@extend_schema_serializer(deprecate_fields=["id"])
class RunStartOut(serializers.Serializer):
    """The answer to starting a run. `id` is the old name of `run_id`, kept for one release."""

    run_id = serializers.IntegerField()
    id = serializers.IntegerField(help_text="Deprecated: the same as `run_id`; removed in the next release.")
    status = serializers.ChoiceField(choices=Run.Status.choices)
    decision = StartDecisionOut()
