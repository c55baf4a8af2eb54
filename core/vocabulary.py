"""The words every layer shares: actions, phases, where an evaluation came from, and severity.

Pure Python (no Django): the engine, the judges and the models import it. Members are `str`
subclasses, so they compare equal to, hash like and serialise as their plain values.
"""

from enum import StrEnum


class Action(StrEnum):
    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"


class Phase(StrEnum):
    BEFORE = "before_workflow"
    MID = "mid_execution"
    AFTER = "after_workflow"


class EvaluationSource(StrEnum):
    ENGINE = "engine"
    LLM_JUDGE = "llm_judge"
    VERIFIER = "verifier"


ACTIONS: tuple[str, ...] = tuple(a.value for a in Action)
PHASES: tuple[str, ...] = tuple(p.value for p in Phase)

# block > warn > allow: how decisions combine and a run's final action only ever rises.
SEVERITY: dict[str, int] = {a.value: rank for rank, a in enumerate(Action)}

# Which provider serves a judge or escalation model, by the model name's prefix.
MODEL_PROVIDERS: tuple[tuple[str, str], ...] = (
    ("gpt-", "openai"),
    ("claude-", "anthropic"),
    ("llama-", "groq"),
    ("mixtral-", "groq"),
)
MODEL_PREFIXES: tuple[str, ...] = tuple(prefix for prefix, _ in MODEL_PROVIDERS)
