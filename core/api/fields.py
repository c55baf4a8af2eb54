"""Strict JSON field types: a string is not a number, 1 is not true, NaN is not a score."""

import math

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.text import NUL_MESSAGE, UNICODE_MESSAGE, text_problem_code

# Deeper than any real payload; keeps a hostile body from exhausting the recursion limit later on.
MAX_JSON_DEPTH = 64


class StrictFloatField(serializers.FloatField):
    default_error_messages = {
        "invalid": "Must be a number.",
        "not_finite": "Must be a finite number.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        try:
            value = float(data)
        except OverflowError:  # an integer with hundreds of digits
            self.fail("not_finite")
        if not math.isfinite(value):
            self.fail("not_finite")
        return super().to_internal_value(value)


class UnitScoreField(StrictFloatField):
    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 0.0)
        kwargs.setdefault("max_value", 1.0)
        kwargs.setdefault(
            "error_messages", {"min_value": "Must be between 0.0 and 1.0.", "max_value": "Must be between 0.0 and 1.0."}
        )
        super().__init__(**kwargs)


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string.", "nul": NUL_MESSAGE, "unicode": UNICODE_MESSAGE}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        problem = text_problem_code(data)
        if problem:
            self.fail(problem)
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be a whole number."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


@extend_schema_field(OpenApiTypes.ANY)
class SafeJSONField(serializers.JSONField):
    """Any JSON value the database can store and the renderer can write back.

    Python's parser accepts 1e999 (infinity), "\u0000" and lone surrogates; PostgreSQL's jsonb
    refuses the last two and the strict JSON renderer the first, each as a 500 long after
    validation. Refuse them here, where the field can still be named.
    """

    default_error_messages = {
        "not_finite": "Numbers must be finite.",
        "nul": NUL_MESSAGE,
        "unicode": UNICODE_MESSAGE,
        "too_deep": f"Must not nest deeper than {MAX_JSON_DEPTH} levels.",
    }

    def to_internal_value(self, data):
        self._check(data, 0)
        return super().to_internal_value(data)

    def _check(self, value, depth: int) -> None:
        # Levels are containers: the field's own object or array is level 1, a scalar adds none. Counted
        # on values, the 65th level was let through when it was an empty object or array.
        if isinstance(value, (dict, list)) and depth >= MAX_JSON_DEPTH:
            self.fail("too_deep")
        if isinstance(value, str):
            problem = text_problem_code(value)
            if problem:
                self.fail(problem)
        elif isinstance(value, float):
            if not math.isfinite(value):
                self.fail("not_finite")
        elif isinstance(value, dict):
            for key, item in value.items():
                self._check(key, depth + 1)
                self._check(item, depth + 1)
        elif isinstance(value, list):
            for item in value:
                self._check(item, depth + 1)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(SafeJSONField):
    default_error_messages = {"not_object": "Must be a JSON object."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_object")
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """Rejects unknown keys, so a typo such as `grounding_score` is an error rather than silence.

    The schema says so too: core.api.schema declares these bodies `additionalProperties: false`.
    """

    default_error_messages = {"invalid": "Expected a JSON object."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        errors = {}
        if unknown:
            errors = {key: ["Unknown field."] for key in unknown}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            errors = {**errors, **exc.detail}
            raise serializers.ValidationError(errors) from None
        if errors:
            raise serializers.ValidationError(errors)
        return value
