"""Small helpers shared by the run, violation, audit and overview pages."""

from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers


def wants_fragment(request) -> bool:
    """An htmx swap asks for a fragment; a boosted link or a history restore wants the whole page."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_page(request, template: str, context: dict, *, fragment: str | None, status: int = 200) -> TemplateResponse:
    """The full page, or only its `{% partialdef fragment %}` for an htmx swap (same view, same template)."""
    name = f"{template}#{fragment}" if fragment and wants_fragment(request) else template
    response = TemplateResponse(request, name, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response


def parse_cursor(value) -> int | None:
    """A keyset cursor from the query string (?before= / ?after=); anything odd means "no cursor"."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 2**63 else None


def has_filters(data, ignore: tuple[str, ...] = ()) -> bool:
    """Whether any filter is set, cursors (and ``ignore``) aside: decides between "no rows yet" and
    "nothing matches"."""
    return any(v for k, v in data.items() if k not in ("before", "after", *ignore))
