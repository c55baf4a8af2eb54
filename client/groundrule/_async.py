"""The asynchronous client: `AsyncClient` and its `AsyncRun` context manager.

A mirror of `_sync.py` with awaits; the shared logic lives in `_run.py` and `_http.py`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; the SDK supports 3.10

from . import _http, _protocol
from ._config import Config, resolve_config
from ._run import (
    RunBase,
    TimedSpan,
    describe_exception,
    grounding_payload,
    llm_attributes,
    provenance_record,
    retrieval_payload,
    span_payload,
)
from .decision import Decision
from .errors import ConflictError, GroundruleUnavailable, PolicyViolationError

logger = logging.getLogger("groundrule")


class AsyncClient:
    """A connection to a Groundrule server for asyncio code; `await client.aclose()` or `async with`."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
        fail_open: bool = True,
        max_retries: int = 2,
        *,
        backoff_base: float = 0.25,
        backoff_max: float = 5.0,
    ) -> None:
        self._config: Config = resolve_config(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            fail_open=fail_open,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
        )
        self._http = httpx.AsyncClient(**_http.client_options(self._config))

    @property
    def fail_open(self) -> bool:
        return self._config.fail_open

    def run(
        self,
        agent_name: str,
        *,
        workflow_name: str | None = None,
        input: Any = None,
        metadata: Mapping[str, Any] | None = None,
        enforce_policy: bool = True,
    ) -> AsyncRun:
        """A governed run; entering the `async with` block starts it, leaving it completes it."""
        return AsyncRun(
            self,
            agent_name=agent_name,
            workflow_name=workflow_name,
            input=input,
            metadata=metadata,
            enforce_policy=enforce_policy,
        )

    async def check_grounding(
        self,
        text: str,
        sources: Sequence[Mapping[str, Any] | str],
        **options: Unpack[_protocol.CheckOptions],
    ) -> dict[str, Any]:
        """See `Client.check_grounding`."""
        payload = _protocol.check_payload(text, sources, options)
        return await self._send("POST", "grounding/check/", payload, replayable=True)

    async def get_run(self, run_id: int) -> dict[str, Any]:
        """See `Client.get_run`."""
        return await self._send("GET", f"runs/{int(run_id)}/", None, replayable=True)

    async def iter_run(self, run_id: int, which: str) -> AsyncIterator[dict[str, Any]]:
        """See `Client.iter_run`."""
        path: str | None = _protocol.run_list_path(run_id, which)
        while path is not None:
            body = await self._send("GET", path, None, replayable=True)
            for row in body["results"]:
                yield row
            path = _protocol.next_page_path(self._config, body)

    async def _send(
        self, method: str, path: str, payload: dict[str, Any] | None, *, replayable: bool
    ) -> dict[str, Any]:
        return await _http.send_async(self._http, self._config, method, path, payload, replayable=replayable)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class AsyncRun(RunBase):
    """One workflow run. Use it through `async with client.run(...) as run:`."""

    def __init__(self, client: AsyncClient, **kwargs: Any) -> None:
        super().__init__(fail_open=client.fail_open, **kwargs)
        self._client = client

    async def _post(
        self, path: str | None, payload: dict[str, Any], *, replayable: bool = False
    ) -> dict[str, Any] | None:
        if path is None:
            return None
        try:
            return await self._client._send("POST", path, payload, replayable=replayable)
        except GroundruleUnavailable as error:
            self._go_offline(error)
            return None

    async def __aenter__(self) -> AsyncRun:
        if self._entered:
            raise RuntimeError("A run can be entered only once.")
        self._entered = True
        try:
            body = await self._client._send("POST", "runs/", self._start_payload(), replayable=False)
        except GroundruleUnavailable as error:
            self._go_offline(error)
            self._decide(None, "before_workflow")
            return self
        self._id = body["id"]
        try:
            self._decide(body, "before_workflow")
        except PolicyViolationError:
            await self._complete_quietly(error=None)
            raise
        return self

    async def record_grounding(
        self,
        *,
        grounding_scores: Iterable[float] = (),
        citations: Iterable[str | Mapping[str, Any]] = (),
        unsupported_claims: Iterable[str] = (),
        output_confidence: float | None = None,
        output: str | None = None,
        sources: Sequence[Mapping[str, Any]] | None = None,
    ) -> Decision:
        payload = grounding_payload(grounding_scores, citations, unsupported_claims, output_confidence, output, sources)
        return self._decide(await self._post(self._path("grounding"), payload), "mid_execution")

    async def record_span(
        self,
        kind: str,
        name: str,
        *,
        input: Any = None,
        output: Any = None,
        started_at: dt.datetime | str | None = None,
        ended_at: dt.datetime | str | None = None,
        attributes: Mapping[str, Any] | None = None,
        duration_ms: float | None = None,
        span_id: str | None = None,
        parent_span_id: str | None = None,
    ) -> dict[str, Any] | None:
        fields = self._span_fields(started_at, ended_at, duration_ms, span_id, parent_span_id)
        payload = span_payload(kind, name, input, output, attributes=attributes, **fields)
        return await self._post(self._path("spans"), payload, replayable=True)

    @contextlib.asynccontextmanager
    async def span(
        self, kind: str, name: str, *, input: Any = None, attributes: Mapping[str, Any] | None = None
    ) -> AsyncIterator[TimedSpan]:
        """See `Run.span`."""
        timed = self._timed(kind, name, input, attributes)
        error: BaseException | None = None
        try:
            yield timed
        except BaseException as exc:
            error = exc
            raise
        finally:
            await self.record_span(kind, name, **timed.end(error))

    async def record_tool_call(
        self,
        name: str,
        input: Any = None,
        output: Any = None,
        started_at: dt.datetime | str | None = None,
        ended_at: dt.datetime | str | None = None,
        attributes: Mapping[str, Any] | None = None,
        *,
        duration_ms: float | None = None,
        span_id: str | None = None,
        parent_span_id: str | None = None,
    ) -> dict[str, Any] | None:
        return await self.record_span(
            "tool",
            name,
            input=input,
            output=output,
            started_at=started_at,
            ended_at=ended_at,
            attributes=attributes,
            duration_ms=duration_ms,
            span_id=span_id,
            parent_span_id=parent_span_id,
        )

    async def record_retrieval(
        self,
        queries: str | Iterable[str],
        results: Iterable[Mapping[str, Any]] | Mapping[str, Iterable[Mapping[str, Any]]],
        *,
        name: str = "retrieval",
        scope: str | None = None,
        filters: Mapping[str, Any] | None = None,
        total_results: int | None = None,
        deduplicated_to: int | None = None,
        retrieval_time_ms: float | None = None,
        intent_resolution_time_ms: float | None = None,
        input: Any = None,
        output: Any = None,
        started_at: dt.datetime | str | None = None,
        ended_at: dt.datetime | str | None = None,
        attributes: Mapping[str, Any] | None = None,
        duration_ms: float | None = None,
        span_id: str | None = None,
        parent_span_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Record a retrieval span with its provenance record (docs/retrieval-provenance.md).

        ``results`` are dicts ``{"source_id", "text", "relevance" (0..1), "source_type"?,
        "metadata"?, "text_preview"?}``, grouped by source name in a mapping, or a flat list whose
        items may say ``"source_name"``. Grounding reports can then name a retrieved result by id
        alone (``sources=[{"id": "chunk_42"}]``) and citations resolve against what was retrieved.
        """
        provenance = provenance_record(
            queries,
            results,
            scope,
            filters,
            total_results,
            deduplicated_to,
            retrieval_time_ms,
            intent_resolution_time_ms,
        )
        # Without a start, the span lasts what the retrieval says it took, up to now.
        duration = duration_ms if duration_ms is not None else retrieval_time_ms
        fields = self._span_fields(started_at, ended_at, duration, span_id, parent_span_id)
        payload = retrieval_payload(name, provenance, input, output, attributes=attributes, **fields)
        return await self._post(self._path("spans"), payload, replayable=True)

    async def record_llm_call(
        self,
        model: str,
        prompt: Any = None,
        response: Any = None,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        started_at: dt.datetime | str | None = None,
        ended_at: dt.datetime | str | None = None,
        attributes: Mapping[str, Any] | None = None,
        duration_ms: float | None = None,
        span_id: str | None = None,
        parent_span_id: str | None = None,
    ) -> dict[str, Any] | None:
        return await self.record_span(
            "llm",
            model,
            input=prompt,
            output=response,
            started_at=started_at,
            ended_at=ended_at,
            attributes=llm_attributes(model, prompt_tokens, completion_tokens, attributes),
            duration_ms=duration_ms,
            span_id=span_id,
            parent_span_id=parent_span_id,
        )

    async def _complete(self, *, error: str | None, enforce: bool) -> Decision | None:
        path = self._path("complete")
        self._completed = True
        try:
            body = await self._post(path, self._complete_payload(error))
        except ConflictError as exc:
            # Already completed (by us before a lost answer, or elsewhere): nothing left to do.
            logger.debug("Groundrule run %s was already completed: %s", self._id, exc.body)
            return None
        return self._decide(body, "after_workflow", enforce=enforce)

    async def _complete_quietly(self, *, error: str | None) -> None:
        try:
            await self._complete(error=error, enforce=False)
        except Exception:
            logger.warning("Groundrule could not complete run %s", self._id, exc_info=True)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._completed or self._offline or self._id is None:
            return
        if exc is None:
            await self._complete(error=None, enforce=True)
        elif self._is_own_violation(exc):
            await self._complete_quietly(error=None)
        else:
            await self._complete_quietly(error=describe_exception(exc))
