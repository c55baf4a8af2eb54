"""How the OpenAPI schema describes the API beyond what drf-spectacular infers.

- Strict input serializers (``StrictSerializer``) are request bodies with
  ``additionalProperties: false``: an unknown key is a 400, and the schema says so.
- Every operation declares its error answers with one of two shapes: ``Error``
  (``{"detail"}``; 401, 403, 404, 409, 411, 413, 415, 429) and ``ValidationError`` (400: each bad field
  named, nested as the input is, or ``detail`` for a body that is not JSON).
- The API key is a bearer security scheme.
- Filter parameters come from the view's FilterSet, for lists and exports alike.

Views say which extra answers they give with ``error_statuses`` (method -> codes), e.g. 409 for
completing a run twice; every view but those any key may call declares 403 (API-key scopes), and
every throttled view 429.
Everything here is pure description: nothing changes what a view does.
"""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent

from .fields import StrictSerializer

ERROR_DESCRIPTIONS = {
    400: "Bad input: each bad field is named (nested as in the input), or `detail` says why the body is not "
    "a JSON object.",
    401: "No API key, or a wrong or revoked one.",
    403: "The API key's scope does not allow this operation.",
    404: "No such object in this tenant (another tenant's objects are not found either).",
    409: "The object's state refuses the request.",
    411: "A chunked body without a Content-Length.",
    413: "The body is over MAX_BODY_BYTES.",
    415: "The body is not application/json.",
    429: "Over this API key's request limit (API_RATE_LIMIT); `Retry-After` says how many seconds to wait.",
    503: "The deployment is not configured for this operation; `detail` names the setting.",
}

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "detail": {"type": "string", "description": "What went wrong, for a person."},
        "request_id": {"type": "string", "description": "This request's id, as in the X-Request-ID header."},
    },
    # Every such answer carries both (core.api.errors.exception_handler, core.middleware.error_json):
    # a client may rely on request_id being there.
    "required": ["detail", "request_id"],
}

VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": "Maps each bad field to its messages: a list of strings, or an object for a nested field "
    "(a list's items by index, an object's keys by name). `non_field_errors` is for the body as "
    "a whole, `detail` (with the string `request_id`) for a body that is not JSON.",
    "properties": {
        "detail": {"type": "string"},
        "non_field_errors": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": {
        "oneOf": [
            {"type": "array", "items": {}},
            {"type": "object", "additionalProperties": {}},
            {"type": "string"},
        ],
    },
}

BODY_METHODS = ("POST", "PUT", "PATCH")

# Query parameters as the server reads them, where the filter's own type says less (schemathesis with
# positive data acceptance sent what these allowed and got a 400): an empty value is refused on every
# endpoint (core.api.contract.filtered; serializers refuse blank), moments are ISO 8601 date-times
# (a date alone is read as its midnight, UTC), ids are whole numbers from 1.
_MOMENTS = {"since", "until"}
_IDS = {"run", "after_id"}
_BOOLEAN_WORDS = ["true", "false", "1", "0"]


def _query_as_served(parameter: dict) -> dict:
    schema = dict(parameter.get("schema", {}))
    name = parameter["name"]
    if name in _MOMENTS:
        schema.update(type="string", format="date-time")
    elif name in _IDS:
        schema.update(type="integer", minimum=1, maximum=2**63 - 1)
    elif schema.get("type") == "boolean":
        schema.update(type="string", enum=_BOOLEAN_WORDS)
    if schema.get("type") == "string" and "enum" not in schema and "format" not in schema:
        schema.setdefault("minLength", 1)
    if schema.get("type") == "array" and schema.get("items", {}).get("type") == "string":
        schema["items"] = {**schema["items"], "minLength": 1} if "enum" not in schema["items"] else schema["items"]
    return {**parameter, "schema": schema}


STRICT_DESCRIPTION = "Unknown fields are refused: a 400 that names them."


class ApiKeyScheme(OpenApiAuthenticationExtension):
    # A string, not the class: core imports nothing of the apps above it.
    target_class = "tenants.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <api key>`; a key speaks for one tenant.",
        }


class GroundruleAutoSchema(AutoSchema):
    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(serializer, StrictSerializer):
            schema["additionalProperties"] = False
            if "__doc__" not in vars(type(serializer)) or not type(serializer).__doc__:
                # Not StrictSerializer's own docstring, which is about the code.
                schema["description"] = STRICT_DESCRIPTION
        return schema

    def _get_parameters(self):
        return [_query_as_served(p) if p.get("in") == "query" else p for p in super()._get_parameters()]

    def get_filter_backends(self):
        # Exports take the same filters as their lists; spectacular would only look at lists.
        if getattr(self.view, "filterset_class", None) is not None and self.method == "GET":
            return [DjangoFilterBackend]
        return super().get_filter_backends()

    def _error_statuses(self) -> set[int]:
        # A public endpoint (the audit keys: public keys are public) takes no key, so never says 401.
        statuses = {401} if self.view.authentication_classes else set()
        has_body = self.method in BODY_METHODS
        if has_body:
            statuses |= {400, 411, 413, 415}
        if getattr(self.view, "filterset_class", None) is not None or getattr(self.view, "pagination_class", None):
            statuses.add(400)
        if "{" in self.path:
            statuses.add(404)
        # A view that declares no scope needs an admin key (tenants.auth.required_scope fails
        # closed), so only the endpoints every key may call ("any", e.g. ping) never answer 403.
        if getattr(self.view, "required_scope", None) != "any":
            statuses.add(403)
        if self.view.get_throttles():
            statuses.add(429)
        extra = getattr(self.view, "error_statuses", {})
        statuses |= set(extra.get(self.method.lower(), ()))
        return statuses

    def _error_component(self, name: str, schema: dict) -> dict:
        component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, schema=schema, object=name)
        self.registry.register_on_missing(component)
        return component.ref

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code in sorted(self._error_statuses()):
            if str(code) in responses:
                continue
            name, schema = ("ValidationError", VALIDATION_ERROR_SCHEMA) if code == 400 else ("Error", ERROR_SCHEMA)
            responses[str(code)] = {
                "content": {"application/json": {"schema": self._error_component(name, schema)}},
                "description": ERROR_DESCRIPTIONS[code],
            }
        return responses
