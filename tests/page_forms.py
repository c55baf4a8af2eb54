"""Reading what a page says beside a form field, as a person would."""

import html
import re


def field_errors(page: str, field: str, *, auto_id: str = "id_%s") -> list[str]:
    """The messages shown beside the field whose id is ``auto_id % field`` (templates/settings/_field.html)."""
    match = re.search(rf'id="{auto_id % field}_error">(.*?)</div>', page, re.S)
    if match is None:
        return []
    return [html.unescape(m) for m in re.findall(r"<p>(.*?)</p>", match.group(1), re.S)]
