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

from rest_framework import exceptions
from rest_framework.serializers import BaseSerializer, as_serializer_error


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
