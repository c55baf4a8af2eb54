"""Primary keys from URLs and query strings: anything that is not a positive 64-bit integer is a 404."""

from django.http import Http404


def pk_or_404(value) -> int:
    try:
        pk = int(value)
    except (TypeError, ValueError):
        raise Http404("Not found.") from None
    if pk <= 0 or pk > 2**63 - 1:
        raise Http404("Not found.")
    return pk
