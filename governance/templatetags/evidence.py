"""Template filters for showing agent-supplied data: any JSON, durations, judge details.

Metadata, inputs and outputs come from agents and judges, so nothing here assumes a shape: a
value is shown as key/value pairs, a list, or text, and anything deep or huge is cut short.
"""

import json
from datetime import datetime
from numbers import Real

from django import template
from django.core.serializers.json import DjangoJSONEncoder
from django.template.defaultfilters import date as date_filter
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from governance.selectors import citation_parts, evaluation_evidence

register = template.Library()

MAX_DEPTH = 4
MAX_ITEMS = 50
MAX_TEXT = 2000
FOLD_KEYS = 8

JUDGE_KEYS = ("model", "provider", "latency_ms", "input_tokens", "output_tokens", "cost_usd", "score", "status")


# The two ways a list row writes its time, for a datetime without Django's general format parser
# (which reads the format string and the locale's settings on every call): on the runs page's fifty
# rows the two `date` filters were about a tenth of the page's CPU (measured). Anything but a
# datetime goes to `date` itself. Both expect local time, as `date` does.


@register.filter(expects_localtime=True, is_safe=False)
def iso_datetime(value) -> str:
    """What ``|date:'c'`` writes."""
    return value.isoformat() if isinstance(value, datetime) else date_filter(value, "c")


@register.filter(expects_localtime=True, is_safe=False)
def to_the_second(value) -> str:
    """What ``|date:"Y-m-d H:i:s"`` writes."""
    if not isinstance(value, datetime):
        return date_filter(value, "Y-m-d H:i:s")
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"


def _text(value: str) -> str:
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"… ({len(value) - MAX_TEXT} more characters)"


def _scalar(value):
    if value is None:
        return mark_safe('<span class="json-null">null</span>')
    if isinstance(value, bool):
        return format_html('<span class="json-bool">{}</span>', "true" if value else "false")
    if isinstance(value, Real):
        return format_html('<span class="json-num">{}</span>', value)
    return format_html('<span class="json-str">{}</span>', _text(str(value)))


def _render(value, depth: int):
    if isinstance(value, dict):
        if not value:
            return mark_safe('<span class="json-empty">{}</span>')
        if depth >= MAX_DEPTH:
            return format_html('<pre class="json">{}</pre>', _text(pretty_json(value)))
        items = list(value.items())
        rows = format_html_join(
            "",
            '<div class="kv-row"><dt>{}</dt><dd>{}</dd></div>',
            ((str(k), _render(v, depth + 1)) for k, v in items[:MAX_ITEMS]),
        )
        more = (
            format_html('<div class="kv-row"><dt>…</dt><dd>{} more keys</dd></div>', len(items) - MAX_ITEMS)
            if len(items) > MAX_ITEMS
            else ""
        )
        if depth > 0 and len(items) > FOLD_KEYS:
            # A big nested object (a policy's whole rule set) folds away so the top level stays readable.
            return format_html(
                '<details class="json-fold"><summary>{} keys</summary><dl class="kv">{}{}</dl></details>',
                len(items),
                rows,
                more,
            )
        return format_html('<dl class="kv">{}{}</dl>', rows, more)
    if isinstance(value, list):
        if not value:
            return mark_safe('<span class="json-empty">[]</span>')
        if depth >= MAX_DEPTH:
            return format_html('<pre class="json">{}</pre>', _text(pretty_json(value)))
        items = format_html_join("", "<li>{}</li>", ((_render(v, depth + 1),) for v in value[:MAX_ITEMS]))
        more = format_html("<li>… {} more</li>", len(value) - MAX_ITEMS) if len(value) > MAX_ITEMS else ""
        return format_html('<ul class="json-list">{}{}</ul>', items, more)
    return _scalar(value)


@register.filter
def json_view(value):
    """Any JSON value as readable HTML: a dict as key/value pairs, a list as a list, text escaped."""
    return _render(value, 0)


@register.filter
def pretty_json(value) -> str:
    try:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, cls=DjangoJSONEncoder)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def duration(ms) -> str:
    """Milliseconds as 340 ms, 1.2 s, 2 min 03 s, 1 h 05 min."""
    if ms is None or not isinstance(ms, Real):
        return "—"
    ms = max(0, ms)
    if ms < 1000:
        return f"{int(ms)} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.filter
def judge_info(metadata) -> dict | None:
    """The judge's model, latency, tokens and cost, wherever in the metadata the judge put them."""
    if not isinstance(metadata, dict):
        return None
    found = {}
    for candidate in (metadata, metadata.get("judge"), metadata.get("llm_judge")):
        if isinstance(candidate, dict):
            for key in JUDGE_KEYS:
                if key in candidate and candidate[key] not in (None, "") and key not in found:
                    found[key] = candidate[key]
    return found if {"model", "latency_ms", "input_tokens", "cost_usd"} & found.keys() else None


@register.filter
def cost(value) -> str:
    if not isinstance(value, Real):
        return "—"
    return f"${value:.6f}".rstrip("0").rstrip(".") if value < 0.01 else f"${value:.4f}"


@register.filter
def percent(value) -> str:
    """A 0..1 score as a CSS width percentage, clamped."""
    if not isinstance(value, Real) or isinstance(value, bool):
        return "0"
    return f"{max(0.0, min(100.0, float(value) * 100)):.1f}"


@register.filter
def as_list(value) -> list:
    """Agent-supplied lists (citations, claims, sources) are normally lists; show anything else as one item."""
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


@register.filter
def source_view(source) -> dict:
    """A grounding source, normally {id, text, score?, span_id?}; anything else becomes its text.

    ``span_id`` says which retrieval span the source's text was resolved from (governance.retrieval).
    """
    if isinstance(source, dict):
        score, span_id = source.get("score"), source.get("span_id")
        return {
            "id": source.get("id"),
            "text": source.get("text"),
            "score": score if isinstance(score, Real) and not isinstance(score, bool) else None,
            "span_id": span_id if type(span_id) is int else None,
            "extra": {k: v for k, v in source.items() if k not in ("id", "text", "score", "span_id")},
        }
    return {
        "id": None,
        "text": source if isinstance(source, str) else pretty_json(source),
        "score": None,
        "span_id": None,
        "extra": {},
    }


@register.filter
def evidence_of(metadata):
    """The verifier's verdicts, self-contradictions and citation failures in an evaluation's metadata."""
    return evaluation_evidence(metadata)


@register.filter
def citation(value):
    """A citation as reported: a source id (a plain string), or {source_id, quote} with its quote."""
    if isinstance(value, str):
        return format_html('<code class="gr-cite-id">{}</code>', _text(value))
    if isinstance(value, dict) and isinstance(value.get("source_id"), str):
        ident, quote = citation_parts(value)
        extra = {k: v for k, v in value.items() if k not in ("source_id", "quote")}
        return format_html(
            '<code class="gr-cite-id">{}</code>{}{}',
            _text(ident),
            format_html(' <q class="gr-quote">{}</q>', _text(quote)) if quote else "",
            format_html(' <span class="gr-muted">{}</span>', _render(extra, 1)) if extra else "",
        )
    return _render(value, 0)


HIGHLIGHT_CONTEXT = 400


@register.filter
def highlight(content, span):
    """``content`` with the first occurrence of ``span`` marked, cut to a window around it; escaped."""
    content = content if isinstance(content, str) else ""
    span = span if isinstance(span, str) else ""
    at = content.find(span) if span else -1
    if at < 0 and span:
        lowered = content.lower()
        # lower() keeps offsets only when it keeps the length (it does for nearly every text).
        at = lowered.find(span.lower()) if len(lowered) == len(content) else -1
    if at < 0:
        return format_html("{}", _text(content))
    stop = at + len(span)
    start, end = max(0, at - HIGHLIGHT_CONTEXT), min(len(content), stop + HIGHLIGHT_CONTEXT)
    return format_html(
        "{}{}<mark>{}</mark>{}{}",
        "… " if start else "",
        content[start:at],
        _text(content[at:stop]),
        content[stop:end],
        " …" if end < len(content) else "",
    )


@register.filter
def without(value, key):
    """A dict without one key (a retrieval span's attributes, less the provenance shown above them)."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != key}
    return value


@register.simple_tag
def badge(action: str):
    """An action or state as a coloured badge whose text, not only its colour, says what it is."""
    return format_html('<span class="badge badge-{}">{}</span>', action, action)
