"""An OpenAI Agents SDK output guardrail that reports the agent's final output (and its sources) to
a Groundrule run, and trips when the policy blocks it.

    import groundrule
    from agents import Agent, Runner
    from groundrule.integrations.openai_agents import groundrule_output_guardrail

    async with groundrule.AsyncClient() as client, client.run(agent_name="support-agent") as run:
        agent = Agent(name="support", instructions="...",
                      output_guardrails=[groundrule_output_guardrail(run, sources=lambda ctx: ctx.context["sources"])])
        result = await Runner.run(agent, "question", context={"sources": [{"id": "kb-1", "text": "..."}]})

A block raises ``agents.OutputGuardrailTripwireTriggered`` from ``Runner.run``; its
``guardrail_result.output.output_info`` holds the Groundrule decision (``action``, ``reason``,
``abstention_response``, ``evaluations``). Warnings pass and are in the run's decisions.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents import Agent, GuardrailFunctionOutput, OutputGuardrail, RunContextWrapper

from .. import AsyncRun, Decision, PolicyViolationError, Run

SourcesArg = Sequence[Mapping[str, Any]] | Callable[[RunContextWrapper[Any]], Sequence[Mapping[str, Any]] | None] | None


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if hasattr(output, "model_dump_json"):  # a structured (pydantic) output
        dumped: str = output.model_dump_json()
        return dumped
    return json.dumps(output, default=str)


def _field(output: Any, name: str) -> Any:
    return output.get(name) if isinstance(output, Mapping) else getattr(output, name, None)


def _decision_info(decision: Decision) -> dict[str, Any]:
    return {
        "action": decision.action,
        "phase": decision.phase,
        "reason": decision.reason,
        "abstention_response": decision.abstention_response,
        "evaluations": [
            {"policy_name": e.policy_name, "action": e.action, "reason": e.reason} for e in decision.evaluations
        ],
    }


def groundrule_output_guardrail(
    run: Run | AsyncRun, *, sources: SourcesArg = None, name: str = "groundrule_grounding"
) -> OutputGuardrail[Any]:
    """An output guardrail reporting to ``run`` (sync ``Run`` or ``AsyncRun``, already started).

    ``sources``: the documents the answer should rest on, a list or a function of the run context.
    A structured output's own ``sources``, ``citations`` and ``grounding_scores`` fields are
    reported too. The tripwire trips when the decision is a block.
    """

    async def check(ctx: RunContextWrapper[Any], agent: Agent[Any], output: Any) -> GuardrailFunctionOutput:
        given = sources(ctx) if callable(sources) else sources
        reported = _field(output, "sources")
        text = _text(output)
        report_sources = [dict(s) for s in (reported if reported is not None else given or [])] or None
        citations = list(_field(output, "citations") or [])
        grounding_scores = list(_field(output, "grounding_scores") or [])
        try:
            if isinstance(run, AsyncRun):
                decision = await run.record_grounding(
                    output=text, sources=report_sources, citations=citations, grounding_scores=grounding_scores
                )
            else:  # the sync client blocks: keep the event loop free
                decision = await asyncio.to_thread(
                    run.record_grounding,
                    output=text,
                    sources=report_sources,
                    citations=citations,
                    grounding_scores=grounding_scores,
                )
            if inspect.isawaitable(decision):
                decision = await decision
        except PolicyViolationError as violation:
            return GuardrailFunctionOutput(output_info=_decision_info(violation.decision), tripwire_triggered=True)
        return GuardrailFunctionOutput(output_info=_decision_info(decision), tripwire_triggered=decision.blocked)

    return OutputGuardrail(guardrail_function=check, name=name)
