"""The JSON Schema of a policy file (GET /api/v1/schema/policy-file.json), for editors.

Derived from the category registry's rule schemas (``RuleSpec``), which also drive validation and
the dashboard's form: a rule added to a category appears here with no edit to this module. The
server validates files with the API's serializer, not with this schema; the schema says the same
thing for an editor that has no server to ask.
"""

from .categories import CATEGORIES
from .categories.base import RuleSpec
from .models import Mode
from .scope import MAX_AGENT_NAME_LENGTH, MAX_AGENTS

_TYPES = {"boolean": "boolean", "number": "number", "integer": "integer", "string": "string"}


def rule_schema(spec: RuleSpec) -> dict:
    schema: dict = {"title": spec.label, "description": spec.help, "default": spec.default}
    if spec.type == "enum":
        schema["enum"] = [*spec.choices, *([None] if spec.nullable else [])]
        return schema
    kind = _TYPES[spec.type]
    schema["type"] = [kind, "null"] if spec.nullable else kind
    if spec.minimum is not None:
        schema["minimum"] = spec.minimum
    if spec.maximum is not None:
        schema["maximum"] = spec.maximum
    if spec.max_length is not None:
        schema["maxLength"] = spec.max_length
    if spec.prefixes:
        schema["pattern"] = "^(" + "|".join(_escaped(p) for p in spec.prefixes) + r")\S+$"
    return schema


def _escaped(text: str) -> str:
    return "".join("\\" + c if c in r"\.^$*+?()[]{}|/-" else c for c in text)


def rules_schema(category_name: str) -> dict:
    category = CATEGORIES[category_name]
    return {
        "type": "object",
        "description": f"The rules of a {category.label.lower()} policy; a rule left out takes its default.",
        "additionalProperties": False,
        "properties": {spec.name: rule_schema(spec) for spec in category.rules},
    }


def policy_file_schema() -> dict:
    categories = sorted(CATEGORIES)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "/api/v1/schema/policy-file.json",
        "title": "Groundrule policy file",
        "description": "One policy, as `groundrule policies pull` writes it and `plan` / `apply` read it.",
        "type": "object",
        "required": ["name", "category"],
        "additionalProperties": False,
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Unique in the tenant; the policy a file applies to.",
            },
            "description": {"type": ["string", "null"], "maxLength": 5000},
            "category": {"enum": categories},
            "mode": {
                "enum": list(Mode.values),
                "default": Mode.ENFORCE.value,
                "description": "shadow: evaluated and recorded, never enforced.",
            },
            "enabled": {"type": "boolean", "default": True},
            "scope": {
                "type": ["object", "null"],
                "additionalProperties": False,
                "properties": {
                    "agents": {
                        "type": "array",
                        "maxItems": MAX_AGENTS,
                        "items": {"type": "string", "minLength": 1, "maxLength": MAX_AGENT_NAME_LENGTH},
                        "description": "Agent names or glob patterns (support-*); empty: every agent.",
                    }
                },
            },
            "rules": {"type": ["object", "null"]},
        },
        "allOf": [
            {
                "if": {"properties": {"category": {"const": name}}, "required": ["category"]},
                "then": {"properties": {"rules": {"anyOf": [rules_schema(name), {"type": "null"}]}}},
            }
            for name in categories
        ],
    }
