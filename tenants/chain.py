"""The audit log's hash chain (issue 11 item 5): pure, so an auditor can run it on an export offline.

Every audit row of a tenant carries ``seq`` (1, 2, 3, ... per tenant), ``prev_hash`` (the hash of
the row before it; 64 zeros for the first) and ``hash``::

    hash = sha256(canonical JSON of {"tenant", "seq", "time", "actor", "action",
                                     "object": {"type", "id", "repr"},
                                     "data": {"before", "after"}, "request_id", "prev_hash"})

Canonical JSON is ``json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
encoded as UTF-8; ``time`` is the row's ``created_at`` in UTC as ISO 8601 (``isoformat()``).
Changing, removing or reordering any row breaks the hash of that row or of the one after it.
The actor is its label (who it was), not the user id: deleting a user nulls the id, by design.

This module imports nothing of Django or of the project, so it can be copied next to an export.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

GENESIS = "0" * 64


def canonical_time(value: datetime | str) -> str:
    """A timestamp as the chain spells it: UTC, ``isoformat()`` (microseconds when non-zero)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError("audit timestamps are timezone-aware")
    return value.astimezone(UTC).isoformat()


def _stored_number(text: str) -> float | int:
    """A JSON fraction as PostgreSQL's jsonb gives it back: its numeric type has no negative zero
    ("-0.0" comes back "0.0") and writes exponents out ("1e+16" comes back 10000000000000000, a
    whole number). Hashed as written, such a row failed verification though nobody touched it."""
    number = Decimal(text)
    if number.as_tuple().exponent >= 0:
        return int(number)
    return float(number) or 0.0


def normalise(data: Any) -> Any:
    """A value as JSON storage gives it back (string keys, lists for tuples): what gets hashed."""
    return json.loads(json.dumps(data), parse_float=_stored_number) if data is not None else None


def canonical(
    *,
    tenant: int,
    seq: int,
    time,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    object_repr: str,
    before: Any,
    after: Any,
    request_id: str,
    prev_hash: str,
) -> bytes:
    content = {
        "tenant": tenant,
        "seq": seq,
        "time": canonical_time(time),
        "actor": actor,
        "action": action,
        "object": {"type": object_type, "id": object_id, "repr": object_repr},
        "data": {"before": before, "after": after},
        "request_id": request_id,
        "prev_hash": prev_hash,
    }
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def row_hash(**content) -> str:
    return hashlib.sha256(canonical(**content)).hexdigest()


def hash_of_export_row(row: Mapping) -> str:
    """The hash a row of the audit export (CSV parsed with ``json.loads`` on before/after, or JSONL)
    should carry."""
    return row_hash(
        tenant=int(row["tenant_id"]),
        seq=int(row["seq"]),
        time=row["created_at"],
        actor=row["actor"],
        action=row["action"],
        object_type=row["object_type"],
        object_id=row["object_id"],
        object_repr=row["object_repr"],
        before=row["before"],
        after=row["after"],
        request_id=row["request_id"],
        prev_hash=row["prev_hash"],
    )


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: int
    first_broken: Any = None  # the id of the first row that does not check out
    problem: str = ""


def verify(
    rows: Iterable[Mapping],
    *,
    head: tuple[int, str] | None = None,
    start: tuple[int, str] | None = None,
    expect: Mapping[int, str] | None = None,
) -> Verdict:
    """Check rows of one tenant given in ``seq`` order, each a mapping with the export's keys plus
    ``id``. ``head`` is the (seq, hash) the server recorded for the chain's end, if known: without
    it, rows removed from the end cannot be noticed. ``start`` is the (seq, hash) of a retention
    checkpoint, the last row removed from the front: the first row given must follow it.

    ``expect`` maps seq to the hash a signed checkpoint holds for it (tenants/signed_checkpoints.py).
    The rows and the head are in the database, so whoever can write there can recompute them all;
    a checkpoint held outside it cannot be, and a chain that no longer leads to it was rewritten."""
    previous_hash, expected_seq, checked, last_id = GENESIS, 1, 0, None
    pending = sorted((expect or {}).items())
    lower = 0  # the last seq a checkpoint matched: a rewrite lies after it
    if start is not None:
        previous_hash, expected_seq = start[1], start[0] + 1
        while pending and pending[0][0] <= start[0]:
            seq, digest = pending.pop(0)
            if seq == start[0] and digest != start[1]:
                return Verdict(False, 0, None, _rewritten(lower, seq))
            lower = seq
    elif pending and pending[0][0] == 0:  # a checkpoint of the empty chain
        if pending.pop(0)[1] != GENESIS:
            return Verdict(False, 0, None, "the checkpoint at seq 0 does not hold the empty chain's hash")
    for row in rows:
        checked += 1
        last_id = row["id"]
        if int(row["seq"]) != expected_seq:
            return Verdict(False, checked, row["id"], f"sequence {row['seq']} where {expected_seq} was expected")
        if row["prev_hash"] != previous_hash:
            return Verdict(False, checked, row["id"], "prev_hash is not the hash of the row before")
        if hash_of_export_row(row) != row["hash"]:
            return Verdict(False, checked, row["id"], "the row's content does not match its hash")
        if pending and pending[0][0] == expected_seq:
            seq, digest = pending.pop(0)
            if digest != row["hash"]:
                return Verdict(False, checked, row["id"], _rewritten(lower, seq))
            lower = seq
        previous_hash, expected_seq = row["hash"], expected_seq + 1
    if pending:
        return Verdict(
            False,
            checked,
            last_id,
            f"the chain ends at seq {expected_seq - 1}, before the checkpoint's seq {pending[0][0]}: "
            "rows were removed from its end",
        )
    if head is not None and (head[0], head[1] or GENESIS) != (expected_seq - 1, previous_hash):
        return Verdict(False, checked, last_id, "the chain ends before the recorded head")
    return Verdict(True, checked)


def _rewritten(lower: int, seq: int) -> str:
    where = f"row {seq}" if lower + 1 == seq else f"one of rows {lower + 1} to {seq}"
    return (
        f"the chain no longer leads to the signed checkpoint at seq {seq}: its hash there differs, so {where} "
        "was changed, inserted or removed and the later hashes recomputed"
    )
