"""The Trace tab's waterfall: where each span, report and phase decision sits on the run's time axis.

Plain layout over values already read (no queries): positions are percentages of the axis, computed
here so the page draws without JavaScript (docs/dashboard.md#trace).
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Nice steps for the axis ticks, in milliseconds: 1-2-5 up to seconds, then what clocks use.
_STEPS_MS = [
    *(m * 10**e for e in range(4) for m in (1, 2, 5)),
    10_000,
    15_000,
    30_000,
    *(m * 60_000 for m in (1, 2, 5, 10, 15, 30)),
    *(h * 3_600_000 for h in (1, 2, 3, 6, 12, 24, 48, 168)),
]
MAX_TICKS = 6
MAX_INDENT = 8  # deeper spans are drawn at this depth: the bars keep their room
HOVER_CHARS = 400


@dataclass
class Tick:
    pct: float
    label: str


@dataclass
class Axis:
    starts: datetime
    ends: datetime

    @property
    def total_ms(self) -> int:
        return int((self.ends - self.starts).total_seconds() * 1000)

    def pct(self, at: datetime) -> float:
        total = max((self.ends - self.starts).total_seconds(), 0.001)
        return round(max(0.0, min(100.0, (at - self.starts).total_seconds() / total * 100)), 3)

    def offset_ms(self, at: datetime) -> int:
        return int((at - self.starts).total_seconds() * 1000)

    def ticks(self) -> list[Tick]:
        total = self.total_ms
        if total <= 0:
            return [Tick(0.0, "0")]
        step = next((s for s in _STEPS_MS if total / s <= MAX_TICKS), _STEPS_MS[-1])
        return [Tick(round(v / total * 100, 3), tick_label(v, step)) for v in range(0, total + 1, step)]


def tick_label(ms: int, step: int) -> str:
    """A tick's offset in the unit its step reads best in: 250 ms, 1.5 s, 2 min, 1 h."""
    if ms == 0:
        return "0"
    if step < 1000:
        return f"{ms} ms"
    if step < 60_000:
        return f"{ms / 1000:g} s"
    if step < 3_600_000 and ms < 3_600_000:
        return f"{ms / 60_000:g} min"
    return f"{ms / 3_600_000:g} h"


@dataclass
class Marker:
    """A grounding report (or a bucket of consecutive ones) or a phase decision: a point on the axis."""

    kind: str  # "report" | "phase"
    label: str
    at: datetime
    action: str | None
    anchor: str  # the id of its entry in the list below the waterfall
    count: int = 1  # the reports it stands for: one, or a bucket of consecutive ones in a long run
    reports_from: int | None = None  # the ?reports= page its entry is on; None: this page
    pct: float = 0.0
    offset_ms: int = 0


@dataclass
class Row:
    """One span of the waterfall, at its depth under its parent."""

    item: Any  # the span's TraceItem
    depth: int = 0
    orphan: bool = False  # names a parent that is not on this page (not recorded, or another page)
    children: list["Row"] = field(default_factory=list)

    @property
    def indent(self) -> int:
        return min(self.depth, MAX_INDENT)

    @property
    def hover(self) -> str:
        """The bar's title: its attributes in one line (the provenance record is shown below the waterfall)."""
        attributes = self.item.obj.attributes if isinstance(self.item.obj.attributes, dict) else {}
        shown = {k: v for k, v in attributes.items() if k != "provenance"}
        if not shown:
            return ""
        text = json.dumps(shown, ensure_ascii=False, default=str, sort_keys=True)
        return text if len(text) <= HOVER_CHARS else text[: HOVER_CHARS - 1] + "…"


def nested(items: Sequence[Any]) -> list[Row]:
    """The spans in tree order: each root by start, its children right under it, one level deeper.

    A span whose parent is missing (not recorded yet, or on another page) is drawn as a root and
    says so. A cycle of parents (two spans naming each other) cannot make a root: those spans are
    drawn as roots too, so every span is drawn once."""
    rows = {id(i.obj): Row(item=i) for i in items}
    by_span_id = {i.obj.span_id: rows[id(i.obj)] for i in items if i.obj.span_id}
    roots: list[Row] = []
    for i in items:
        row = rows[id(i.obj)]
        parent = by_span_id.get(i.obj.parent_span_id) if i.obj.parent_span_id else None
        if parent is None or parent is row:
            row.orphan = bool(i.obj.parent_span_id)
            roots.append(row)
        else:
            parent.children.append(row)
    ordered: list[Row] = []
    seen: set[int] = set()

    def walk(row: Row, depth: int) -> None:
        if id(row) in seen:
            return
        seen.add(id(row))
        row.depth = depth
        ordered.append(row)
        for child in row.children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    for row in rows.values():  # in a cycle: no root reaches them
        if id(row) not in seen:
            row.orphan = True
            walk(row, 0)
    return ordered
