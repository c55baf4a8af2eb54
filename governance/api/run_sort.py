"""`GET /api/v1/runs/?sort=`: the runs list in the dashboard's sorts (governance/selectors/run_list.py),
keyset-paginated on (column, id) like the page, so no row is skipped or repeated across pages even
where many runs share a value (docs/api.md, "Sorting runs").

A sorted list pages forward only (`previous` is null): its cursor holds the last row's key, and the
page has no way back either. Its cursor is standard base64, as the id cursor's.
"""

import base64
import binascii

from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from core.api.pagination import IdCursorPagination

from ..selectors.run_list import SORT_VALUES, Sort, cursor_json, cursor_key, parse_sort, sorted_page

SORT_PARAMETER = OpenApiParameter(
    "sort",
    str,
    enum=SORT_VALUES,
    description=(
        "Order of the runs, as on the dashboard's runs list: a key ascending, or `-` and the key descending "
        "(`-started`, newest first, is the default). Runs without a worst score or duration come last "
        "either way; `action` orders allow, warn, block. Ties are broken by id, so paging never skips "
        "or repeats a run. A sorted list pages forward only: `previous` is null."
    ),
)


def requested_sort(request) -> tuple[Sort, bool] | None:
    """The ?sort= asked for, or None for the default order (newest first by id); unknown is a 400."""
    raw = request.query_params.get("sort")
    if raw is None:
        return None
    if raw not in SORT_VALUES:
        raise exceptions.ValidationError({"sort": [f"Must be one of: {', '.join(SORT_VALUES)}."]})
    sort, descending = parse_sort(raw)
    return None if sort is None else (sort, descending)


def _cursor(request, sort: Sort) -> tuple[int, object, int] | None:
    token = request.query_params.get("cursor")
    if token is None:
        return None
    invalid = exceptions.ValidationError({"cursor": ["Invalid cursor."]})
    try:
        raw = base64.b64decode(token.encode("ascii"), validate=True)
    except (ValueError, binascii.Error):
        raise invalid from None
    key = cursor_key(raw, sort)
    if key is None:
        raise invalid
    return key


def sorted_runs(request, rows, sort: Sort, descending: bool, represent) -> Response:
    """One page of ``rows`` in this sort, in the shape of every paginated list (next, previous, results)."""
    size = IdCursorPagination().get_page_size(request)  # the same page_size rule (and 400) as unsorted
    page = sorted_page(rows, sort, descending, _cursor(request, sort), size=size)
    url = request.build_absolute_uri()
    following = None
    if page.next_key is not None:
        token = base64.b64encode(cursor_json(*page.next_key)).decode()
        following = replace_query_param(remove_query_param(url, "cursor"), "cursor", token)
    return Response({"next": following, "previous": None, "results": represent(page.rows)})
