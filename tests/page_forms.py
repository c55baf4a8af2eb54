"""Reading what a page says beside a form field, as a person would."""

import html
import re


def field_errors(page: str, field: str) -> list[str]:
    """The messages shown beside the field with id ``id_<field>`` (templates/settings/_field.html)."""
    match = re.search(rf'id="id_{field}_error">(.*?)</div>', page, re.S)
    if match is None:
        return []
    return [html.unescape(m) for m in re.findall(r"<p>(.*?)</p>", match.group(1), re.S)]
