"""What every policy category is made of: a rule schema and an evaluate function.

Pure Python on purpose (no Django, no I/O) so the engine can be tested exhaustively and
benchmarked in microseconds. A category declares its rules as ``RuleSpec`` rows; validation,
defaults and the dashboard form are all driven by that tuple, so adding a rule is appending a row.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.text import text_problem
from core.vocabulary import PHASES

RULE_TYPES = ("boolean", "number", "integer", "string", "enum")

NOT_AN_OBJECT = "Must be an object mapping rule names to values."


@dataclass(frozen=True, slots=True)
class RunState:
    """What the agent has reported, as the services layer hands it to the engine.

    mid_execution gets the scores and citations of the current report only; after_workflow gets
    everything accumulated over the run and the latest output_confidence (docs/grounding-policies.md,
    "Accumulating Grounding Data"). Scores and confidences are floats. A citation is a string or
    a dict ``{"source_id", "quote"?}``. ``sources`` are dicts ``{"id", "text", ...}`` that
    citations may resolve to: the run's reported sources, and the results of its retrieval spans
    when a citation check needs them.
    """

    grounding_scores: tuple[float, ...] = ()
    citations: tuple = ()
    unsupported_claims: tuple[str, ...] = ()
    output_confidence: float | None = None
    output: str | None = None
    sources: tuple = ()
    # The agent's score audit (docs/score-audit.md): mean reported − measured grounding score over
    # the last 7 days and how many audited reports it rests on. Given only when a policy asks for it.
    score_inflation: float | None = None
    score_audit_samples: int = 0


@dataclass(frozen=True, slots=True)
class Outcome:
    action: str
    reason: str
    metadata: dict
    abstention_response: str | None = None


def fast_constructor(cls):
    """Return a function that builds ``cls`` (a frozen slots dataclass) without its __init__.

    A frozen dataclass's generated __init__ goes through ``object.__setattr__`` once per field,
    which costs about a microsecond for a ten-field Evaluation: the whole per-policy budget of
    the engine. Instead we fill a mutable twin with the same slots using plain attribute stores
    and hand it the frozen class, which CPython allows because the two layouts are identical.
    The result is an ordinary, immutable instance of ``cls``. Positional arguments only, in
    field order, every field given.
    """
    slots = cls.__slots__
    twin = type(f"_{cls.__name__}Builder", (), {"__slots__": slots})
    args = ", ".join(slots)
    body = "".join(f"    _o.{name} = {name}\n" for name in slots)
    source = f"def build({args}):\n    _o = _twin()\n{body}    _o.__class__ = _cls\n    return _o\n"
    namespace = {"_twin": twin, "_cls": cls}
    exec(source, namespace)
    build = namespace["build"]
    build.__qualname__ = f"new_{cls.__name__.lower()}"
    return build


new_outcome = fast_constructor(Outcome)

# An outcome's fields as a plain tuple (action, reason, metadata, abstention_response): what a
# category's per-phase check returns, so the engine's hot loop builds no Outcome it would discard.
Result = tuple[str, str, dict, "str | None"]
Check = Callable[[dict, RunState], Result]


class RuleValidationError(Exception):
    """Rules (or a scope) an admin submitted that we refuse; ``errors`` names each problem.

    Keys are rule names, or "rules" for a problem with the object as a whole.
    """

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{key}: {' '.join(messages)}" for key, messages in errors.items()))


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSpec:
    name: str
    label: str
    type: str
    default: Any
    help: str
    nullable: bool = False
    minimum: float | int | None = None
    maximum: float | int | None = None
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    # Strings only: the value must start with one of these and have something after it.
    prefixes: tuple[str, ...] = ()

    def __post_init__(self):
        if self.type not in RULE_TYPES:
            raise ValueError(f"{self.name}: unknown rule type {self.type!r}")
        if self.type == "enum" and not self.choices:
            raise ValueError(f"{self.name}: an enum needs choices")

    def as_dict(self) -> dict:
        """The schema row as JSON, for the dashboard form and the API docs."""
        data = {
            "name": self.name,
            "label": self.label,
            "type": self.type,
            "default": self.default,
            "help": self.help,
            "nullable": self.nullable,
        }
        for key in ("minimum", "maximum", "max_length"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.choices:
            data["choices"] = list(self.choices)
        if self.prefixes:
            data["prefixes"] = list(self.prefixes)
        return data

    @property
    def pattern(self) -> str | None:
        """What ``prefixes`` accepts, as a regular expression: a prefix, then something, no whitespace."""
        if not self.prefixes:
            return None
        return "^(?:" + "|".join(re.escape(p) for p in self.prefixes) + r")\S+$"

    def json_schema(self) -> dict:
        """The values the rule accepts, as JSON Schema (OpenAPI 3.0), for the API's schema."""
        schema: dict[str, Any] = {"description": self.help}
        if self.type == "enum":
            schema.update(type="string", enum=list(self.choices))
        else:
            schema["type"] = self.type
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        if self.pattern:
            schema["pattern"] = self.pattern
        if self.nullable:
            schema["nullable"] = True
        return schema

    def clean(self, value: Any) -> Any:
        """Return the value coerced to the rule's type, or raise ValueError with the message."""
        if value is None and self.nullable:
            return None
        return _CLEANERS[self.type](self, value)

    def _range_text(self, fmt) -> str:
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f" between {fmt(low)} and {fmt(high)}"
        if low is not None:
            return f" of at least {fmt(low)}"
        if high is not None:
            return f" of at most {fmt(high)}"
        return ""

    def _in_range(self, value) -> bool:
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)


def _clean_boolean(spec: RuleSpec, value: Any) -> bool:
    # Strictly JSON true/false: 0, 1, "true" and "yes" are all mistakes worth telling about.
    if type(value) is not bool:
        raise ValueError("Must be true or false.")
    return value


def _clean_number(spec: RuleSpec, value: Any) -> float:
    message = f"Must be a number{spec._range_text(float)}."
    if type(value) not in (int, float):  # bool is a subclass of int; type() keeps it out
        raise ValueError(message)
    try:
        value = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(message) from None
    if not math.isfinite(value) or not spec._in_range(value):
        raise ValueError(message)
    return value


def _clean_integer(spec: RuleSpec, value: Any) -> int:
    if type(value) is not int:
        raise ValueError("Must be a whole number.")
    if not spec._in_range(value):
        raise ValueError(f"Must be a whole number{spec._range_text(int)}.")
    return value


def _clean_text(value: Any, message: str) -> str:
    if type(value) is not str:
        raise ValueError(message)
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _clean_string(spec: RuleSpec, value: Any) -> str:
    value = _clean_text(value, "Must be a string.")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise ValueError(f"Must be at most {spec.max_length} characters.")
    if spec.prefixes and not _has_prefix(value, spec.prefixes):
        raise ValueError(f"Must be a model name starting with {_or_list(spec.prefixes)}.")
    return value


def _has_prefix(value: str, prefixes: tuple[str, ...]) -> bool:
    if any(c.isspace() for c in value):
        return False
    return any(value.startswith(p) and len(value) > len(p) for p in prefixes)


def _clean_enum(spec: RuleSpec, value: Any) -> str:
    if type(value) is not str or value not in spec.choices:
        raise ValueError(f"Must be one of: {', '.join(spec.choices)}.")
    return value


def _or_list(items: tuple[str, ...]) -> str:
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} or {items[-1]}"


_CLEANERS = {
    "boolean": _clean_boolean,
    "number": _clean_number,
    "integer": _clean_integer,
    "string": _clean_string,
    "enum": _clean_enum,
}


class Category(ABC):
    """A policy category: its rule schema, the phases it runs at, and how it evaluates.

    Subclasses set the class attributes and implement ``evaluate``. One instance per category
    lives in the registry (``policies.categories``).
    """

    name: str = ""
    label: str = ""
    description: str = ""
    rules: tuple[RuleSpec, ...] = ()
    phases: tuple[str, ...] = PHASES

    def __init__(self):
        self._specs = {spec.name: spec for spec in self.rules}
        if len(self._specs) != len(self.rules):
            raise ValueError(f"{self.name}: duplicate rule names")
        self._defaults = {spec.name: spec.default for spec in self.rules}

    def __repr__(self):
        return f"<Category {self.name}>"

    def rule(self, name: str) -> RuleSpec:
        return self._specs[name]

    def defaults(self) -> dict:
        return dict(self._defaults)

    def clean_rules(self, raw: Any) -> dict:
        """Validate the rules an admin submitted. Returns the submitted rules only, coerced.

        Every problem is collected before raising, so the form or API response can show them
        all at once.
        """
        if not isinstance(raw, dict):
            raise RuleValidationError({"rules": [NOT_AN_OBJECT]})
        errors: dict[str, list[str]] = {}
        cleaned = {}
        for key, value in raw.items():
            spec = self._specs.get(key) if isinstance(key, str) else None
            if spec is None:
                errors[str(key)] = ["Unknown rule."]
                continue
            try:
                cleaned[key] = spec.clean(value)
            except ValueError as exc:
                errors[key] = [str(exc)]
        if errors:
            raise RuleValidationError(errors)
        # Schema order, so stored rules and their diffs read the same way as the form.
        return {name: cleaned[name] for name in self._specs if name in cleaned}

    def effective_rules(self, cleaned: dict) -> dict:
        """Every rule of the schema, the stored value where there is one, else the default.

        Keys that are no longer in the schema are dropped.
        """
        rules = dict(self._defaults)
        for name, value in cleaned.items():
            if name in rules:
                rules[name] = value
        return rules

    @abstractmethod
    def check(self, phase: str) -> Check | None:
        """The function judging one phase, ``(rules, state) -> Result``; None if not run then.

        ``rules`` must be effective rules (every key present). The engine calls this once per
        decision and then the returned function per policy.
        """

    def evaluate(self, phase: str, rules: dict, state: RunState) -> Outcome:
        """Judge ``state`` at ``phase`` under ``rules``.

        ``rules`` are normally effective rules; stored rules missing some keys (a rule added
        since) are filled with defaults. Raises ValueError for an unknown phase, and never for
        valid rules and state. A phase the category does not run at allows.
        """
        if phase not in PHASES:
            raise ValueError(f"Unknown phase: {phase!r}")
        check = self.check(phase)
        if check is None:
            return new_outcome("allow", f"{self.label} does not run at {phase}", {}, None)
        try:
            return new_outcome(*check(rules, state))
        except KeyError:
            return new_outcome(*check(self.effective_rules(rules), state))
