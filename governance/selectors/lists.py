"""The runs, violations and audit lists, keyset-paginated.

Every list is keyset-paginated by id (`?before=<id>` for older rows, `?after=<id>` for newer ones):
no OFFSET and no COUNT(*) over the whole set, so a page costs the same at row ten and at row ten
million.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from heapq import merge

from django.db.models import QuerySet

from tenants.models import AuditEvent

from ..filters import AuditFilter, ViolationFilter
from ..models import Action, Evaluation, ReviewState

PAGE_SIZE = 50
VIOLATION_ACTIONS = (Action.WARN, Action.BLOCK)


@dataclass
class KeysetPage:
    rows: list
    older: int | None = None  # pass as ?before= to read the next, older page
    newer: int | None = None  # pass as ?after= to read the previous, newer page

    @property
    def has_other_pages(self) -> bool:
        return self.older is not None or self.newer is not None


def keyset_page(
    querysets: Sequence[QuerySet], *, before: int | None = None, after: int | None = None, size: int = PAGE_SIZE
) -> KeysetPage:
    """Newest-first rows by id from one or more querysets over disjoint rows, merged.

    Several querysets let a caller split an `IN (...)` filter into one range scan per value (the
    violations list reads warns and blocks separately): each is then an index range scan on
    `(tenant, action, -id)` that stops after `size + 1` rows, however rare either action is.
    """
    if after is not None and before is None:
        parts = [list(qs.filter(id__gt=after).order_by("id")[: size + 1]) for qs in querysets]
        rows = list(merge(*parts, key=lambda r: r.id))[: size + 1]
        if len(rows) <= size:
            # Back at the newest rows: show the full first page rather than a short one.
            return keyset_page(querysets, size=size)
        newer = rows[size - 1].id
        rows = rows[:size][::-1]
        # We came from an older page, so rows older than these exist.
        return KeysetPage(rows=rows, older=rows[-1].id if rows else None, newer=newer)
    parts = []
    for qs in querysets:
        if before is not None:
            qs = qs.filter(id__lt=before)
        parts.append(list(qs.order_by("-id")[: size + 1]))
    rows = list(merge(*parts, key=lambda r: -r.id))[: size + 1]
    older = rows[size - 1].id if len(rows) > size else None
    rows = rows[:size]
    newer = rows[0].id if (before is not None and rows) else None
    return KeysetPage(rows=rows, older=older, newer=newer)


def _filtered(filterset_class, data, queryset):
    fs = filterset_class(data, queryset=queryset)
    return fs, fs.is_valid()


def violation_list(*, tenant, data, before=None, after=None) -> tuple[ViolationFilter, KeysetPage]:
    fs, valid = _filtered(ViolationFilter, data, Evaluation.objects.filter(tenant=tenant))
    if not valid:
        return fs, KeysetPage(rows=[])
    chosen = fs.form.cleaned_data.get("action")
    actions = [chosen] if chosen else list(VIOLATION_ACTIONS)
    # The filters without ViolationFilter's own `action IN (warn, block)`: each part below names its
    # action, and the redundant IN would only skew the planner's row estimates.
    base = fs.filter_queryset(fs.queryset.all()).defer("metadata")
    return fs, keyset_page([base.filter(action=a) for a in actions], before=before, after=after)


COUNT_CAP = 1_000


def violation_counts(*, tenant, data) -> list[tuple[str, int, bool]]:
    """Per review state, how many violations match the other filters: (state, count, capped). Each count
    stops at COUNT_CAP ("1000+"), so it costs at most that many index entries however many there are."""
    others = data.copy()
    others.pop("review_state", None)
    fs = ViolationFilter(others, queryset=Evaluation.objects.filter(tenant=tenant))
    if not fs.is_valid():
        return []
    counts = []
    for state in ReviewState.values:
        found = fs.qs.filter(review_state=state).order_by().values("id")[: COUNT_CAP + 1].count()
        counts.append((state, min(found, COUNT_CAP), found > COUNT_CAP))
    return counts


# The list's parameters that are not filters: where the list starts, and the state next_pending fixes.
QUEUE_NOT_FILTERS = ("before", "after", "review_state")


def next_pending(*, tenant, before: int | None = None, data=None) -> int | None:
    """The pending violation a reviewer works next: the newest older than ``before`` (or the newest),
    among those the review queue's filters in ``data`` keep (all of them when the filters are not valid)."""
    pending = Evaluation.objects.filter(
        tenant=tenant, shadow=False, review_state=ReviewState.PENDING, action__in=VIOLATION_ACTIONS
    )
    if data:
        filters = data.copy()
        for key in QUEUE_NOT_FILTERS:
            filters.pop(key, None)
        fs = ViolationFilter(filters, queryset=Evaluation.objects.filter(tenant=tenant))
        if fs.is_valid():
            pending = fs.qs.filter(review_state=ReviewState.PENDING)
    if before is not None:
        older = pending.filter(id__lt=before).order_by("-id").values_list("id", flat=True).first()
        if older is not None:
            return older
        pending = pending.exclude(id=before)  # back to the newest, but never the one being read
    return pending.order_by("-id").values_list("id", flat=True).first()


def audit_list(*, tenant, data, before=None, after=None) -> tuple[AuditFilter, KeysetPage]:
    fs, valid = _filtered(AuditFilter, data, AuditEvent.objects.filter(tenant=tenant))
    if not valid:
        return fs, KeysetPage(rows=[])
    return fs, keyset_page([fs.qs], before=before, after=after)
