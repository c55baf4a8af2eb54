"""Reading the judge's score out of whatever the model answered.

The prompt asks for one final line ``SCORE: <0.0-1.0>``, but models do not always obey, so
:func:`parse_score` is tolerant. In order of preference it accepts:

1. a labelled score, ``SCORE: 0.85`` (any case, markdown such as ``**Score:** 0.85``, ``=`` instead
   of ``:``, ``score is 0.85``); the *last* label wins, since the format asks for a final line;
2. a JSON object with a ``"score"`` key, ``{"score": 0.85}`` (number or numeric string);
3. a fraction, ``8/10`` or ``85/100`` (last one wins);
4. a percentage, ``85%`` (last one wins);
5. a bare number: the whole answer or its last line; or else the only number in the answer when
   it lies in 0..1 (``Well grounded: 0.9.``; but ``3 claims are unsupported`` is not a score).

Normalisation: ``%`` divides by 100, ``x/n`` divides by ``n``; an unqualified value above 1 is taken
as a 0-10 scale when it is at most 10 and as a 0-100 scale when it is at most 100 (``8`` → 0.8,
``85`` → 0.85). The result is clamped to 0..1. Anything else — empty text, prose without a number,
several unlabelled numbers — is unparseable and yields ``(0.5, False)``: docs/grounding-policies.md, "Unparseable
response — defaults to 0.5 (neutral score)".
"""

from __future__ import annotations

import json
import math
import re

NEUTRAL_SCORE = 0.5

_NUM = r"[-+]?(?:\d+(?:[.,]\d+)?|[.,]\d+)"

_LABELLED = re.compile(
    r"\bscore\b[\s*_`\"'“”]*(?:[:=]|\bis\b|\bof\b)?[\s*_`\"'“”]*"
    rf"(?P<num>{_NUM})(?:\s*(?P<pct>%)|\s*/\s*(?P<den>\d+(?:\.\d+)?))?",
    re.IGNORECASE,
)
_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_FRACTION = re.compile(rf"(?<![\w.])(?P<num>{_NUM})\s*/\s*(?P<den>\d+(?:\.\d+)?)(?![\w.])")
_PERCENT = re.compile(rf"(?<![\w.])(?P<num>{_NUM})\s*%")
_BARE = re.compile(rf"^\s*[*_`\"'(\[]*(?P<num>{_NUM})[*_`\"')\].]*\s*$")
_ANY_NUMBER = re.compile(rf"(?<![\w.])(?P<num>{_NUM})(?![\w])")


def _to_float(raw: str) -> float | None:
    try:
        value = float(raw.replace(",", "."))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _normalise(value: float, *, percent: bool = False, denominator: float | None = None) -> float | None:
    if percent:
        value = value / 100.0
    elif denominator is not None:
        if denominator <= 0:
            return None
        value = value / denominator
    elif value > 1.0:
        if value <= 10.0:
            value = value / 10.0
        elif value <= 100.0:
            value = value / 100.0
        else:
            value = 1.0
    return min(1.0, max(0.0, value))


def _from_match(match: re.Match[str]) -> float | None:
    value = _to_float(match.group("num"))
    if value is None:
        return None
    groups = match.groupdict()
    den = groups.get("den")
    return _normalise(
        value,
        percent=bool(groups.get("pct")),
        denominator=_to_float(den) if den else None,
    )


def _last(pattern: re.Pattern[str], text: str) -> float | None:
    for match in reversed(list(pattern.finditer(text))):
        value = _from_match(match)
        if value is not None:
            return value
    return None


def _from_json(text: str) -> float | None:
    candidates = [text.strip()] + [m.group(0) for m in _JSON_OBJECT.finditer(text)]
    for candidate in candidates:
        if not candidate.startswith("{"):
            continue
        try:
            data = json.loads(candidate)
        except (ValueError, TypeError):
            continue
        if not isinstance(data, dict):
            continue
        for key, raw in data.items():
            if str(key).lower() != "score" or isinstance(raw, bool):
                continue
            if isinstance(raw, (int, float)):
                try:  # JSON integers are unbounded: float() of a 400-digit one overflows, and judge() never raises
                    value: float | None = float(raw)
                except OverflowError:
                    value = None
                if value is not None and math.isfinite(value):
                    return _normalise(value)
            if isinstance(raw, str):
                inner, ok = parse_score(raw)
                if ok:
                    return inner
    return None


def parse_score(text: str | None) -> tuple[float, bool]:
    """``(score in 0..1, parsed)``; ``(0.5, False)`` when no score can be read."""
    if not isinstance(text, str) or not text.strip():
        return NEUTRAL_SCORE, False
    text = text.strip()

    finders = (
        lambda t: _last(_LABELLED, t),
        _from_json,
        lambda t: _last(_FRACTION, t),
        lambda t: _last(_PERCENT, t),
    )
    for finder in finders:
        value = finder(text)
        if value is not None:
            return value, True

    # A bare number: the whole answer, or its last line.
    lines = [line for line in text.splitlines() if line.strip()]
    for candidate in (text, lines[-1] if lines else ""):
        match = _BARE.match(candidate)
        if match:
            value = _from_match(match)
            if value is not None:
                return value, True

    # The only number in the answer, when it is already on the 0-1 scale ("Well grounded: 0.9.").
    # Prose like "3 claims are unsupported" is not a score.
    numbers = list(_ANY_NUMBER.finditer(text))
    if len(numbers) == 1:
        value = _to_float(numbers[0].group("num"))
        if value is not None and 0.0 <= value <= 1.0:
            return value, True

    return NEUTRAL_SCORE, False
