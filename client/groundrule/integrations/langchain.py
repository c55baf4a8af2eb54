"""A LangChain callback handler that reports a chain's LLM, tool and retriever calls to a Groundrule
run, and its final answer as a grounding report.

    import groundrule
    from groundrule.integrations.langchain import GroundruleCallbackHandler

    with groundrule.Client() as client, client.run(agent_name="rag-agent") as run:
        answer = chain.invoke(question, config={"callbacks": [GroundruleCallbackHandler(run)]})

Retrieved documents become the retrieval span's provenance, and the final report names them as its
sources (by id, so the server takes their text from what was retrieved). A block raises
``groundrule.PolicyViolationError`` out of ``invoke`` (``raise_error``), as it does for a bare run.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from .. import Run

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import LLMResult

GroundingHook = Callable[[str, Sequence[Mapping[str, Any]]], Mapping[str, Any]]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any], default: str) -> str:
    if kwargs.get("name"):
        return str(kwargs["name"])
    serialized = serialized or {}
    if serialized.get("name"):
        return str(serialized["name"])
    ids = serialized.get("id") or []
    return str(ids[-1]) if ids else default


def _text(value: Any) -> str | None:
    """The answer in a chain's output: a string, a message's content, or a usual key of a dict."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(value, Mapping):
        for key in ("output", "answer", "result", "text"):
            if key in value:
                return _text(value[key])
    return None


def _relevance(metadata: Mapping[str, Any], default: float) -> float:
    for key in ("relevance_score", "relevance", "score"):
        value = metadata.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            return min(1.0, max(0.0, float(value)))
    return default


class GroundruleCallbackHandler(BaseCallbackHandler):
    """Records LangChain events on ``run`` (a started sync ``groundrule.Run``).

    ``grounding``: optional ``(answer, retrieved_results) -> dict`` of extra ``record_grounding``
    arguments (``grounding_scores``, ``citations``, ``unsupported_claims``, ``output_confidence``),
    for agents that score their answers. ``report_grounding=False`` records spans only.
    ``default_relevance`` is the relevance of a document whose metadata carries no score.
    """

    raise_error = True  # a PolicyViolationError must reach the caller, not be logged by LangChain

    def __init__(
        self,
        run: Run,
        *,
        report_grounding: bool = True,
        grounding: GroundingHook | None = None,
        default_relevance: float = 1.0,
    ) -> None:
        self.run = run
        self.report_grounding = report_grounding
        self.grounding = grounding
        self.default_relevance = default_relevance
        self.retrieved: list[dict[str, Any]] = []
        self._started: dict[UUID, tuple[dt.datetime, str, Any]] = {}
        # Nesting: a tool, LLM or retriever run started inside another of them is its child on the
        # Trace tab; LangChain's run ids are the span ids (chains are not spans, so are skipped).
        self._parents: dict[UUID, UUID | None] = {}
        self._lock = threading.Lock()

    def _start(self, run_id: UUID, name: str, input: Any, parent_run_id: UUID | None = None) -> None:
        with self._lock:
            self._started[run_id] = (_now(), name, input)
            self._parents[run_id] = parent_run_id if parent_run_id in self._started else None

    def _finish(self, run_id: UUID) -> tuple[dt.datetime | None, str, Any]:
        with self._lock:
            return self._started.pop(run_id, (None, "", None))

    def _ids(self, run_id: UUID) -> dict[str, Any]:
        with self._lock:
            parent = self._parents.pop(run_id, None)
        return {"span_id": run_id.hex, "parent_span_id": parent.hex if parent else None}

    # -- LLMs ---------------------------------------------------------------------------------

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id, _name(serialized, kwargs, "llm"), list(prompts), kwargs.get("parent_run_id"))

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        rendered = [[{"role": m.type, "content": m.content} for m in batch] for batch in messages]
        self._start(run_id, _name(serialized, kwargs, "chat_model"), rendered, kwargs.get("parent_run_id"))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        started, name, prompt = self._finish(run_id)
        texts: list[str] = []
        usage: dict[str, Any] = {}
        model = None
        for generations in response.generations:
            for generation in generations:
                texts.append(generation.text)
                message = getattr(generation, "message", None)
                usage = getattr(message, "usage_metadata", None) or usage
                model = (getattr(message, "response_metadata", None) or {}).get("model_name") or model
        llm_output = response.llm_output or {}
        token_usage = llm_output.get("token_usage") or {}
        model = model or llm_output.get("model_name") or name
        self.run.record_llm_call(
            str(model),
            prompt,
            texts[0] if len(texts) == 1 else texts,
            prompt_tokens=usage.get("input_tokens", token_usage.get("prompt_tokens")),
            completion_tokens=usage.get("output_tokens", token_usage.get("completion_tokens")),
            started_at=started,
            ended_at=_now(),
            attributes={"langchain_name": name},
            **self._ids(run_id),
        )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        started, name, prompt = self._finish(run_id)
        self.run.record_span(
            "llm",
            name or "llm",
            input=prompt,
            started_at=started,
            ended_at=_now(),
            attributes={"error": f"{type(error).__name__}: {error}"[:2000]},
            **self._ids(run_id),
        )

    # -- tools --------------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = _name(serialized, kwargs, "tool")
        self._start(run_id, name, inputs if inputs is not None else input_str, kwargs.get("parent_run_id"))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        started, name, input = self._finish(run_id)
        content = getattr(output, "content", output)
        self.run.record_tool_call(
            name,
            input=input,
            output=content if isinstance(content, (str, int, float, bool, list, dict, type(None))) else str(content),
            started_at=started,
            ended_at=_now(),
            **self._ids(run_id),
        )

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        started, name, input = self._finish(run_id)
        self.run.record_tool_call(
            name,
            input=input,
            started_at=started,
            ended_at=_now(),
            attributes={"error": f"{type(error).__name__}: {error}"[:2000]},
            **self._ids(run_id),
        )

    # -- retrievers ---------------------------------------------------------------------------

    def on_retriever_start(self, serialized: dict[str, Any], query: str, *, run_id: UUID, **kwargs: Any) -> None:
        self._start(run_id, _name(serialized, kwargs, "retriever"), query, kwargs.get("parent_run_id"))

    def on_retriever_end(self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any) -> None:
        started, name, query = self._finish(run_id)
        results = []
        for n, document in enumerate(documents):
            metadata = dict(document.metadata or {})
            source_id = (
                document.id or metadata.get("id") or metadata.get("source") or f"{name}-{len(self.retrieved) + n}"
            )
            results.append(
                {
                    "source_id": str(source_id),
                    "text": document.page_content,
                    "relevance": _relevance(metadata, self.default_relevance),
                    "metadata": {k: v for k, v in metadata.items() if isinstance(v, (str, int, float, bool))},
                }
            )
        with self._lock:
            self.retrieved.extend(results)
        self.run.record_retrieval(
            query or "", {name: results}, name=name, started_at=started, ended_at=_now(), **self._ids(run_id)
        )

    # -- the end of the outermost chain: the answer ---------------------------------------------

    def on_chain_end(self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        if parent_run_id is not None or not self.report_grounding:
            return
        answer = _text(outputs)
        if answer is None:
            return
        with self._lock:
            retrieved = list(self.retrieved)
            self.retrieved.clear()
        extra = dict(self.grounding(answer, retrieved)) if self.grounding else {}
        sources = [{"id": r["source_id"]} for r in retrieved] or None
        self.run.record_grounding(output=answer, sources=extra.pop("sources", sources), **extra)
