"""Strict JSON field types: a string is not a number, 1 is not true, NaN is not a score."""

import math

from rest_framework import serializers


class StrictFloatField(serializers.FloatField):
    default_error_messages = {
        "invalid": "Must be a number.",
        "not_finite": "Must be a finite number.",
    }

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        value = float(data)
        if not math.isfinite(value):
            self.fail("not_finite")
        return super().to_internal_value(value)


class UnitScoreField(StrictFloatField):
    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 0.0)
        kwargs.setdefault("max_value", 1.0)
        kwargs.setdefault("error_messages", {
            "min_value": "Must be between 0.0 and 1.0.", "max_value": "Must be between 0.0 and 1.0."})
        super().__init__(**kwargs)


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string.", "nul": "Must not contain NUL characters."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            self.fail("nul")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class JSONObjectField(serializers.JSONField):
    default_error_messages = {"not_object": "Must be a JSON object."}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_object")
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """Rejects unknown keys, so a typo such as `grounding_score` is an error rather than silence."""

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
            raise serializers.ValidationError(errors)
        if errors:
            raise serializers.ValidationError(errors)
        return value
