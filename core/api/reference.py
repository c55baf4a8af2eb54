"""The API endpoint reference (docs/api-reference.md), rendered from the OpenAPI schema.

Pure: a schema dict and each operation's key scope in, Markdown out. The `api_reference` command
builds the schema the server serves (drf-spectacular) and writes the page; a test fails when the
committed page differs from what the schema renders, so the reference cannot drift from the API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
HEADER = """# Endpoint reference

Every endpoint the server answers, generated from its OpenAPI schema (`python manage.py api_reference`
writes this page; a test fails when it is out of date). Each operation names the API key scope it needs
(see [Using the API](api.md#authentication-and-request-ids)); the running server also serves the schema
at `/api/v1/schema/`, Swagger UI at `/api/v1/docs/` and ReDoc at `/api/v1/redoc/`.

Error answers are declared on every operation: `400` names each bad field, `401` a missing or revoked key,
`403` the scope needed, `404` another tenant's object or an unknown path, `409` a conflict, `411`, `413`
and `415` a body without a length, too large, or not JSON, and `429` the key's rate limit (with
`Retry-After`). See [Using the API](api.md#errors).
"""


def _type(schema: Mapping[str, Any], components: Mapping[str, Any]) -> str:
    """A short type: `string`, `integer`, `array of Evaluation`, `Action` (an enum's component name)."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for combined in ("allOf", "oneOf", "anyOf"):
        if combined in schema:
            names = [_type(part, components) for part in schema[combined]]
            names = [name for name in names if name != "null"]
            return " or ".join(dict.fromkeys(names))
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = " or ".join(k for k in kind if k != "null")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}), components)}"
    if "enum" in schema:
        return " · ".join(f"`{value}`" for value in schema["enum"] if value is not None)
    if schema.get("format") in ("date-time", "uuid", "uri", "email"):
        return f"{kind} ({schema['format']})"
    return str(kind)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _body_fields(operation: Mapping[str, Any], components: Mapping[str, Any]) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {})
    media = content.get("application/json") or next(iter(content.values()), None)
    if not media:
        return []
    schema = media.get("schema", {})
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    resolved = components.get(name, schema)
    required = set(resolved.get("required", []))
    rows = []
    for field, spec in resolved.get("properties", {}).items():
        if spec.get("readOnly"):
            continue
        mark = "yes" if field in required else ""
        rows.append(f"| `{field}` | {_cell(_type(spec, components))} | {mark} |")
    return rows


def _parameters(operation: Mapping[str, Any], components: Mapping[str, Any]) -> list[str]:
    rows = []
    for parameter in operation.get("parameters", []):
        if parameter.get("in") not in ("query", "path"):
            continue
        kind = _type(parameter.get("schema", {}), components)
        mark = "yes" if parameter.get("required") else ""
        rows.append(f"| `{parameter['name']}` ({parameter['in']}) | {_cell(kind)} | {mark} |")
    return rows


def _success(operation: Mapping[str, Any], components: Mapping[str, Any]) -> str:
    answers = []
    for status, response in operation.get("responses", {}).items():
        if not status.startswith("2"):
            continue
        content = response.get("content", {})
        kinds = [
            _type(media.get("schema", {}), components) if media.get("schema") else media_type
            for media_type, media in content.items()
        ]
        answers.append(f"`{status}`" + (f" {' / '.join(dict.fromkeys(kinds))}" if kinds else ""))
    return ", ".join(answers)


def render(schema: Mapping[str, Any], scope_of: Callable[[str, str], str]) -> str:
    """The page. ``scope_of(path, method)`` names the key scope an operation needs."""
    components = schema.get("components", {}).get("schemas", {})
    summary = ["## Operations", "", "| method | path | key scope | answers |", "| --- | --- | --- | --- |"]
    details: list[str] = ["## Details", ""]
    for path, operations in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            scope = scope_of(path, method.upper())
            anchor = operation["operationId"].replace("_", "-")
            summary.append(
                f"| {method.upper()} | [`{path}`](#{anchor}) | `{scope}` | {_cell(_success(operation, components))} |"
            )
            details += [f"### {method.upper()} `{path}` {{#{anchor}}}", ""]
            if operation.get("deprecated"):
                details += ["Deprecated.", ""]
            details += [f"Key scope: `{scope}`. Answers: {_success(operation, components)}.", ""]
            parameters = _parameters(operation, components)
            if parameters:
                details += ["| parameter | type | required |", "| --- | --- | --- |", *parameters, ""]
            fields = _body_fields(operation, components)
            if fields:
                details += ["| body field | type | required |", "| --- | --- | --- |", *fields, ""]
    return "\n".join([HEADER, *summary, "", *details]).rstrip() + "\n"
