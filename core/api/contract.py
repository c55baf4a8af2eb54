"""The one way an API view reads its body and writes its answer.

Every view validates with a strict input serializer (``validated``) and answers through an
output serializer (``represented``), so the OpenAPI schema, built from the same serializers,
describes each body exactly.

Both use one unbound instance per serializer class. A DRF serializer deep-copies its declared
fields on every instantiation: about a quarter of a millisecond for the grounding report's
serializer, measured against bench/report.py's hot path (docs: README "Benchmarks"). These
serializers keep no per-call state (no context, no instance), so one instance serves every
request, and a bad input raises the same 400 as ``is_valid(raise_exception=True)``.
"""

from functools import cache

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from rest_framework import ISO_8601, exceptions, fields
from rest_framework.serializers import BaseSerializer, ModelSerializer, as_serializer_error
from rest_framework.settings import api_settings


@cache
def _prototype(serializer_class: type[BaseSerializer], partial: bool = False) -> BaseSerializer:
    return serializer_class(partial=partial)


def validated(serializer_class: type[BaseSerializer], data, *, partial: bool = False) -> dict:
    """The validated body, or a 400 naming every bad field (unknown ones included)."""
    try:
        return _prototype(serializer_class, partial).run_validation(data)
    except exceptions.ValidationError as exc:
        raise exceptions.ValidationError(as_serializer_error(exc)) from None


def represented(serializer_class: type[BaseSerializer], instance) -> dict:
    """``instance`` (an object or a mapping) as ``serializer_class`` declares it: nothing more."""
    return _prototype(serializer_class).to_representation(instance)


def represented_list(serializer_class: type[BaseSerializer], instances) -> list[dict]:
    prototype = _prototype(serializer_class)
    return [prototype.to_representation(instance) for instance in instances]


# Output fields whose `to_representation` gives back a value as the database returns it for the
# model field behind it (str, int, bool, decoded JSON): `represented_rows` skips the call.
_AS_STORED = (fields.CharField, fields.ChoiceField, fields.IntegerField, fields.BooleanField)


@cache
def _row_plan(serializer_class: type[ModelSerializer]) -> tuple[tuple[str, str, fields.Field | None], ...]:
    """(output name, model attname, the field if its value needs converting) for each field."""
    model = serializer_class.Meta.model
    plan = []
    for field in _prototype(serializer_class)._readable_fields:
        try:
            if len(field.source_attrs) != 1:
                raise FieldDoesNotExist(field.source)
            column = model._meta.get_field(field.source).attname
        except FieldDoesNotExist:
            name = f"{serializer_class.__name__}.{field.field_name}"
            raise ImproperlyConfigured(f"{name} is not a model column.") from None
        as_stored = isinstance(field, _AS_STORED) or (isinstance(field, fields.JSONField) and not field.binary)
        plan.append((field.field_name, column, None if as_stored else field))
    return tuple(plan)


def _converter(field: fields.Field):
    """``field.to_representation``, or for an ISO 8601 datetime the same string with the field's
    time zone looked up once per list, not per value (half the cost of a datetime, measured)."""
    if not isinstance(field, fields.DateTimeField):
        return field.to_representation
    if str(getattr(field, "format", api_settings.DATETIME_FORMAT)).lower() != ISO_8601:
        return field.to_representation
    zone = field.timezone if hasattr(field, "timezone") else field.default_timezone()
    if zone is None:
        return field.to_representation

    def iso(value):
        if value.tzinfo is None:
            return field.to_representation(value)
        text = value.astimezone(zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return iso


def represented_rows(serializer_class: type[ModelSerializer], queryset) -> list[dict]:
    """The same dicts as ``represented_list`` over ``queryset``, read as tuples: no model
    instances, and no field calls for values the database already gives in their JSON form.

    For long lists of flat model serializers (every field a column): the evaluations of a run
    read over the API took three quarters of that answer's time through the model and the
    serializer's per-field calls (README "Benchmarks", bench/load.py).
    """
    plan = _row_plan(serializer_class)
    names = [name for name, _, _ in plan]
    converted = [(i, _converter(field)) for i, (_, _, field) in enumerate(plan) if field is not None]
    rows = []
    for values in queryset.values_list(*(column for _, column, _ in plan)):
        if converted:
            values = list(values)
            for i, convert in converted:
                if values[i] is not None:
                    values[i] = convert(values[i])
        rows.append(dict(zip(names, values, strict=True)))
    return rows


def known_query(request, allowed) -> None:
    """A 400 naming each query parameter the endpoint does not know (``allowed``), as for bodies:
    a misspelt parameter (``?sinse=``) would otherwise be ignored and answer every row."""
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise exceptions.ValidationError({key: ["Unknown query parameter."] for key in unknown})


PAGE_PARAMETERS = ("cursor", "page_size")


def filtered(filterset_class, request, queryset, *, also: tuple[str, ...] = PAGE_PARAMETERS):
    """The rows a list's query string selects through its FilterSet (the one the page and export use).

    As with bodies, a parameter the endpoint does not know is a 400 naming it, not silently ignored: a
    misspelt filter would otherwise answer every row.
    """
    known_query(request, {*filterset_class.base_filters, *also})
    # A dashboard form sends empty fields for filters left unset; an API client that names a filter
    # means it, so an empty value is refused rather than read as "no filter".
    empty = sorted(key for key, values in request.query_params.lists() if any(v == "" for v in values))
    if empty:
        raise exceptions.ValidationError({key: ["Must not be empty."] for key in empty})
    filters = filterset_class(request.query_params, queryset=queryset, request=request)
    if not filters.is_valid():
        raise exceptions.ValidationError(filters.errors)
    return filters.qs
