"""Input for what an answer rests on: citations (docs/citations.md) and retrieval provenance
(docs/retrieval-provenance.md).

A citation is a non-empty string (a source identifier, docs/grounding-policies.md) or an object
``{"source_id": str, "quote"?: str}``.

A ``retrieval`` span carries the provenance record of docs/retrieval-provenance.md in ``attributes.provenance``::

    {"intent": {"text_queries": [str], "scope": str|null, "filters": {}, "mode"?: str, "raw_data"?: any},
     "results_by_source": {"<source name>": [{"source_id": str, "source_type"?: str, "relevance": 0..1,
                                              "text": str, "text_preview"?: str, "metadata"?: {}}]},
     "results"?: [same items, the flat merged list],
     "total_results"?: int, "deduplicated_to"?: int,
     "retrieval_time_ms"?: number, "intent_resolution_time_ms"?: number}

``results_by_source`` is keyed by source name, as in the seed. Unknown keys are refused at every
level, so a misspelt field is a 400 that names it, not a record the dashboard cannot read.
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import (
    JSONObjectField,
    SafeJSONField,
    StrictCharField,
    StrictFloatField,
    StrictSerializer,
    UnitScoreField,
)

MAX_RESULTS = 1000
MAX_QUERIES = 100


class CitationIn(StrictSerializer):
    source_id = StrictCharField(max_length=2000)
    quote = StrictCharField(max_length=5000, required=False)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "minLength": 1, "maxLength": 2000, "description": "A source identifier."},
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["source_id"],
                "properties": {
                    "source_id": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "quote": {"type": "string", "maxLength": 5000},
                },
            },
        ],
    }
)
class CitationField(serializers.Field):
    default_error_messages = {"invalid": 'Must be a non-empty string or an object {{"source_id", "quote"?}}.'}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._as_string = StrictCharField(max_length=2000)

    def to_internal_value(self, data):
        if isinstance(data, str):
            return self._as_string.run_validation(data)
        if isinstance(data, dict):
            citation = CitationIn(data=data)
            if not citation.is_valid():
                raise serializers.ValidationError(citation.errors)
            return dict(citation.validated_data)
        self.fail("invalid")

    def to_representation(self, value):
        return value


class StrictCountField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be a whole number."}

    def to_internal_value(self, data):
        if type(data) is not int:
            self.fail("invalid")
        return super().to_internal_value(data)


class ResultIn(StrictSerializer):
    source_id = StrictCharField(max_length=500)
    source_type = StrictCharField(max_length=200, required=False, allow_blank=True)
    source_name = StrictCharField(max_length=200, required=False, allow_blank=True)
    relevance = UnitScoreField()
    text = StrictCharField(max_length=100_000, allow_blank=True, trim_whitespace=False)
    text_preview = StrictCharField(max_length=10_000, required=False, allow_blank=True, trim_whitespace=False)
    metadata = JSONObjectField(required=False)


class IntentIn(StrictSerializer):
    text_queries = serializers.ListField(child=StrictCharField(max_length=2000), max_length=MAX_QUERIES)
    scope = StrictCharField(max_length=200, required=False, allow_null=True, allow_blank=True)
    filters = JSONObjectField(required=False)
    mode = StrictCharField(max_length=100, required=False, allow_blank=True)
    raw_data = SafeJSONField(required=False, allow_null=True)


class ResultsBySourceField(serializers.DictField):
    default_error_messages = {"not_a_dict": "Must be an object mapping each source name to its list of results."}

    def __init__(self, **kwargs):
        kwargs.setdefault("child", serializers.ListField(child=ResultIn(), max_length=MAX_RESULTS))
        super().__init__(**kwargs)


class ProvenanceIn(StrictSerializer):
    intent = IntentIn()
    results_by_source = ResultsBySourceField()
    results = serializers.ListField(child=ResultIn(), required=False, max_length=MAX_RESULTS)
    total_results = StrictCountField(min_value=0, required=False, allow_null=True)
    deduplicated_to = StrictCountField(min_value=0, required=False, allow_null=True)
    retrieval_time_ms = StrictFloatField(min_value=0, required=False, allow_null=True)
    intent_resolution_time_ms = StrictFloatField(min_value=0, required=False, allow_null=True)

    def validate(self, attrs):
        total, kept = attrs.get("total_results"), attrs.get("deduplicated_to")
        if total is not None and kept is not None and kept > total:
            raise serializers.ValidationError({"deduplicated_to": ["Must not exceed total_results."]})
        return attrs


def provenance_errors(kind: str, attributes: dict) -> dict | None:
    """Errors for ``attributes.provenance`` of a span, shaped to name the field; None if fine."""
    if "provenance" not in attributes:
        return None
    if kind != "retrieval":
        return {"attributes": {"provenance": ["Only a retrieval span carries a provenance record."]}}
    serializer = ProvenanceIn(data=attributes["provenance"])
    if serializer.is_valid():
        return None
    return {"attributes": {"provenance": serializer.errors}}
