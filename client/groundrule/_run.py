"""What the sync and the async run share: payloads, decision handling, fail-open state.

Only the network calls differ between `Run` and `AsyncRun`; everything that decides what a
response means lives here so the two cannot drift apart.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .context import GroundingDecision, decide_grounding
from .decision import Decision
from .errors import GroundruleUnavailable, PolicyViolationError

logger = logging.getLogger("groundrule")

SPAN_KINDS = ("tool", "llm", "retrieval")
# The span a `with run.span(...)` block holds open, with the run object it belongs to: spans recorded
# inside the block (in this thread or task) name it as their parent (docs/sdk.md#nested-spans).
_OPEN_SPAN: contextvars.ContextVar[tuple[int, str] | None] = contextvars.ContextVar("groundrule_span", default=None)


def new_span_id() -> str:
    """16 hex digits, as OpenTelemetry's span ids."""
    return secrets.token_hex(8)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _as_datetime(value: dt.datetime | str) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None  # the server names the field that is wrong


_MAX_ERROR = 10_000


def _timestamp(value: dt.datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.astimezone()  # naive means local time
    return value.isoformat()


def _drop_none(payload: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if value is not None}


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    message = f"{type(exc).__qualname__}: {text}" if text else type(exc).__qualname__
    return message.replace("\x00", "")[:_MAX_ERROR]


def grounding_payload(
    grounding_scores: Iterable[float],
    citations: Iterable[str | Mapping[str, Any]],
    unsupported_claims: Iterable[str],
    output_confidence: float | None,
    output: str | None,
    sources: Sequence[Mapping[str, Any]] | None,
) -> dict[str, Any]:
    return _drop_none(
        {
            # float() also takes numpy scalars, which json cannot encode.
            "grounding_scores": [float(score) for score in grounding_scores],
            # A citation is a source id, or {"source_id", "quote"?} (the citation contract).
            "citations": [c if isinstance(c, str) else dict(c) for c in citations],
            "unsupported_claims": list(unsupported_claims),
            "output_confidence": None if output_confidence is None else float(output_confidence),
            "output": output,
            "sources": None if sources is None else [dict(source) for source in sources],
        }
    )


def span_payload(
    kind: str,
    name: str,
    input: Any,
    output: Any,
    started_at: dt.datetime | str | None,
    ended_at: dt.datetime | str | None,
    attributes: Mapping[str, Any] | None,
    span_id: str | None = None,
    parent_span_id: str | None = None,
) -> dict[str, Any]:
    if kind not in SPAN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SPAN_KINDS)}; got {kind!r}")
    return _drop_none(
        {
            "kind": kind,
            "name": name,
            "input": input,
            "output": output,
            "started_at": _timestamp(started_at),
            "ended_at": _timestamp(ended_at),
            "attributes": dict(attributes) if attributes else None,
            "span_id": span_id,
            "parent_span_id": parent_span_id,
        }
    )


def span_times(
    started_at: dt.datetime | str | None,
    ended_at: dt.datetime | str | None,
    duration_ms: float | None,
) -> tuple[dt.datetime | str, dt.datetime | str]:
    """A shortcut's start and end: as given; else it ended now (a shortcut is called once the work is
    done) and started `duration_ms` before its end, or at its end when nothing says how long it took."""
    end: dt.datetime | str = ended_at if ended_at is not None else _now()
    if started_at is not None:
        return started_at, end
    known_end = _as_datetime(end)
    if known_end is None:
        return end, end
    if known_end.tzinfo is None:
        known_end = known_end.astimezone()
    return known_end - dt.timedelta(milliseconds=max(0.0, float(duration_ms or 0))), end


def _result(result: Mapping[str, Any]) -> dict[str, Any]:
    item = dict(result)
    if isinstance(item.get("relevance"), (int, float)) and not isinstance(item["relevance"], bool):
        item["relevance"] = float(item["relevance"])  # numpy scalars too
    return item


def provenance_record(
    queries: str | Iterable[str],
    results: Iterable[Mapping[str, Any]] | Mapping[str, Iterable[Mapping[str, Any]]],
    scope: str | None,
    filters: Mapping[str, Any] | None,
    total_results: int | None,
    deduplicated_to: int | None,
    retrieval_time_ms: float | None,
    intent_resolution_time_ms: float | None,
) -> dict[str, Any]:
    """The retrieval provenance record (docs/retrieval-provenance.md).

    ``results`` grouped by source name, or a flat list grouped here by each result's
    ``source_name`` (else ``"default"``).
    """
    intent: dict[str, Any] = {
        "text_queries": [queries] if isinstance(queries, str) else list(queries),
        "filters": dict(filters) if filters else {},
    }
    if scope is not None:
        intent["scope"] = scope
    by_source: dict[str, list[dict[str, Any]]] = {}
    if isinstance(results, Mapping):
        for name, items in results.items():
            by_source[str(name)] = [_result(item) for item in items]
    else:
        for item in results:
            result = _result(item)
            by_source.setdefault(str(result.pop("source_name", None) or "default"), []).append(result)
    return _drop_none(
        {
            "intent": intent,
            "results_by_source": by_source,
            "total_results": total_results,
            "deduplicated_to": deduplicated_to,
            "retrieval_time_ms": None if retrieval_time_ms is None else float(retrieval_time_ms),
            "intent_resolution_time_ms": None
            if intent_resolution_time_ms is None
            else float(intent_resolution_time_ms),
        }
    )


def retrieval_payload(
    name: str,
    provenance: dict[str, Any],
    input: Any,
    output: Any,
    started_at: dt.datetime | str | None,
    ended_at: dt.datetime | str | None,
    attributes: Mapping[str, Any] | None,
    span_id: str | None = None,
    parent_span_id: str | None = None,
) -> dict[str, Any]:
    return span_payload(
        "retrieval",
        name,
        input,
        output,
        started_at,
        ended_at,
        {**(attributes or {}), "provenance": provenance},
        span_id,
        parent_span_id,
    )


def llm_attributes(
    model: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    attributes: Mapping[str, Any] | None,
) -> dict[str, Any]:
    merged: dict[str, Any] = {"model": model, **(attributes or {})}
    if prompt_tokens is not None:
        merged["prompt_tokens"] = prompt_tokens
    if completion_tokens is not None:
        merged["completion_tokens"] = completion_tokens
    if prompt_tokens is not None and completion_tokens is not None:
        merged.setdefault("total_tokens", prompt_tokens + completion_tokens)
    return merged


class TimedSpan:
    """What a `with run.span(...)` block records: set `output` (and add `attributes`) inside the block;
    its start and end are the block's own."""

    def __init__(
        self,
        kind: str,
        name: str,
        input: Any,
        attributes: Mapping[str, Any] | None,
        *,
        run_key: int = 0,
        parent_span_id: str | None = None,
    ) -> None:
        if kind not in SPAN_KINDS:
            raise ValueError(f"kind must be one of {', '.join(SPAN_KINDS)}; got {kind!r}")
        self.kind, self.name, self.input = kind, name, input
        self.output: Any = None
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.span_id = new_span_id()
        self.parent_span_id = parent_span_id
        self.started_at = _now()
        self.ended_at: dt.datetime | None = None
        self._token = _OPEN_SPAN.set((run_key, self.span_id))

    def end(self, error: BaseException | None) -> dict[str, Any]:
        self.ended_at = _now()
        _OPEN_SPAN.reset(self._token)
        if error is not None:
            self.attributes.setdefault("error", f"{type(error).__name__}: {error}")
        return {
            "input": self.input,
            "output": self.output,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "attributes": self.attributes or None,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
        }


class RunBase:
    """State of one governed workflow run."""

    def __init__(
        self,
        *,
        fail_open: bool,
        agent_name: str,
        workflow_name: str | None,
        input: Any,
        metadata: Mapping[str, Any] | None,
        enforce_policy: bool,
    ) -> None:
        self.agent_name = agent_name
        self.workflow_name = workflow_name
        self.input = input
        self.metadata = dict(metadata) if metadata else None
        self.enforce_policy = enforce_policy
        self._fail_open = fail_open
        self._id: int | None = None
        self._status: str | None = None
        self._decisions: list[Decision] = []
        self._result: Any = None
        self._output: str | None = None
        self._offline = False  # the server was unreachable and we fail open: nothing more is sent
        self._entered = False
        self._completed = False

    @property
    def id(self) -> int | None:
        """The server's run id; None when the run failed open before it started."""
        return self._id

    @property
    def status(self) -> str | None:
        """The run's status as last reported by the server (running, completed, blocked, failed)."""
        return self._status

    @property
    def decisions(self) -> list[Decision]:
        """Every decision received so far, in order (a copy)."""
        return list(self._decisions)

    @property
    def last_decision(self) -> Decision | None:
        return self._decisions[-1] if self._decisions else None

    @property
    def failed_open(self) -> bool:
        """True once the server was unreachable and the run carries on ungoverned."""
        return self._offline

    @property
    def grounding_context(self) -> dict[str, Any] | None:
        """The context rules the server sent at start (see `Decision.grounding_context`), or None."""
        for decision in self._decisions:
            if decision.grounding_context is not None:
                return decision.grounding_context
        return None

    def decide_grounding(
        self, retrieved_text: str | None = None, prepared_documents: Sequence[Any] | None = None
    ) -> GroundingDecision:
        """What may reach the model, under the context rules of this agent's policy.

        Computed locally (no call) with the rules the server sent in the before_workflow
        decision; the defaults (hybrid, augment_chunks) when there were none, e.g. failed open.
        """
        context = self.grounding_context
        return decide_grounding(retrieved_text, prepared_documents, (context or {}).get("rules"))

    def set_result(self, result: Any, output: str | None = None) -> None:
        """What the run produced; sent when the `with` block ends (after_workflow)."""
        self._result = result
        if output is not None:
            self._output = output

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self._id} agent={self.agent_name!r} status={self._status}>"

    # -- helpers for the sync and async subclasses ------------------------------------------

    def _start_payload(self) -> dict[str, Any]:
        return _drop_none(
            {
                "agent_name": self.agent_name,
                "workflow_name": self.workflow_name,
                "input": self.input,
                "metadata": self.metadata,
            }
        )

    def _open_span_id(self) -> str | None:
        """The span a `with self.span(...)` block holds open here, if any: the parent of what is recorded."""
        current = _OPEN_SPAN.get()
        return current[1] if current is not None and current[0] == id(self) else None

    def _timed(self, kind: str, name: str, input: Any, attributes: Mapping[str, Any] | None) -> TimedSpan:
        return TimedSpan(kind, name, input, attributes, run_key=id(self), parent_span_id=self._open_span_id())

    def _span_fields(
        self,
        started_at: dt.datetime | str | None,
        ended_at: dt.datetime | str | None,
        duration_ms: float | None,
        span_id: str | None,
        parent_span_id: str | None,
    ) -> dict[str, Any]:
        """What every span carries: its start and end (`span_times`), its id and its parent's: the open
        `span()` block's unless one is named (``""`` names none: a root span)."""
        started_at, ended_at = span_times(started_at, ended_at, duration_ms)
        return {
            "started_at": started_at,
            "ended_at": ended_at,
            "span_id": span_id or new_span_id(),
            "parent_span_id": self._open_span_id() if parent_span_id is None else (parent_span_id or None),
        }

    def _complete_payload(self, error: str | None) -> dict[str, Any]:
        return _drop_none({"result": self._result, "output": self._output, "error": error})

    def _path(self, action: str) -> str | None:
        """The URL of a run call, or None when nothing should be sent (failed open)."""
        if not self._entered:
            raise RuntimeError("The run has not started: use `with client.run(...) as run:`.")
        if self._completed:
            raise RuntimeError(f"Run {self._id} is already completed; start a new run.")
        if self._offline:
            return None
        return f"runs/{self._id}/{action}/"

    def _go_offline(self, error: GroundruleUnavailable) -> None:
        if not self._fail_open:
            raise error
        logger.warning(
            "Groundrule unreachable; failing open, run %s of %r continues ungoverned: %s",
            self._id,
            self.agent_name,
            error,
        )
        self._offline = True

    def _decide(self, body: dict[str, Any] | None, phase: str, *, enforce: bool = True) -> Decision:
        """Record the decision in `body` (None: failed open), log a warn and raise a block."""
        if body is None:
            decision = Decision.fail_open(phase)
        else:
            decision = Decision.from_dict(body["decision"])
            self._status = body.get("status", self._status)
        self._decisions.append(decision)
        if decision.warned:
            logger.warning("Groundrule policy warning for run %s (%s): %s", self._id, decision.phase, decision.reason)
        elif decision.blocked:
            if enforce and self.enforce_policy:
                raise PolicyViolationError(decision, run_id=self._id)
            logger.warning(
                "Groundrule policy block for run %s (%s), not enforced: %s", self._id, decision.phase, decision.reason
            )
        return decision

    def _is_own_violation(self, exc: BaseException | None) -> bool:
        return isinstance(exc, PolicyViolationError) and exc.run_id == self._id and self._id is not None
