import orjson
from django_scopes import scope
from rest_framework import exceptions, negotiation, parsers, renderers
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from .schema import GroundruleAutoSchema


class JSONOnlyNegotiation(negotiation.DefaultContentNegotiation):
    """The API speaks JSON only, so `?format=` is not DRF's renderer switch here.

    Left to DRF, `?format=csv` on the export endpoints (whose own parameter it is) answered 404
    before the view ran. Exports pick their format themselves and stream it.
    """

    def select_renderer(self, request, renderers, format_suffix=None):
        renderer = renderers[0]
        return renderer, renderer.media_type


class JSONParser(parsers.JSONParser):
    """DRF's parser, except that a body nested thousands of levels deep is a 400, not a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None


# orjson writes what DRF's encoder would for everything but datetimes and dataclasses: those go to it.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_drf_default = JSONEncoder().default


class JSONRenderer(renderers.JSONRenderer):
    """DRF's compact JSON, written by orjson, with \\u escapes for text UTF-8 cannot carry.

    orjson: a long run's detail is close to a megabyte of JSON, which ``json.dumps`` took about
    7 ms to write on this machine and orjson under 1 ms (docs/benchmarks.md, bench/load.py). The
    bytes are DRF's: UTF-8, no spaces, U+2028 and U+2029 escaped. What orjson refuses (an integer
    beyond 64 bits, a lone surrogate) and an indented answer (``Accept: ...; indent=2``) go through
    DRF's renderer.

    Escapes: an error message can echo what the client sent, such as an unknown key "\\ud800" (a
    lone surrogate, which JSON escapes allow); encoding that as UTF-8 raised, turning a 400 into a 500.
    """

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is not None and self.get_indent(accepted_media_type, renderer_context or {}) is None:
            try:
                body = orjson.dumps(data, default=_drf_default, option=_ORJSON_OPTIONS)
            except (orjson.JSONEncodeError, TypeError):
                pass
            else:
                if b"\xe2\x80" not in body:  # neither separator (one scan, not two copies)
                    return body
                return body.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            self.ensure_ascii = True
            return super().render(data, accepted_media_type, renderer_context)


class TenantAPIView(APIView):
    """An API view whose every query is scoped to the API key's tenant.

    The scope opens once authentication has found the tenant and closes when dispatch ends, even
    on an unhandled error, so a query that forgot its tenant filter still cannot see another
    tenant's rows and no scope outlives its request.
    """

    content_negotiation_class = JSONOnlyNegotiation
    schema = GroundruleAutoSchema()
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    _tenant_scope = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self._tenant_scope = scope(tenant=request.tenant)
        self._tenant_scope.__enter__()

    def dispatch(self, request, *args, **kwargs):
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            cm, self._tenant_scope = self._tenant_scope, None
            if cm is not None:
                cm.__exit__(None, None, None)

    @property
    def tenant(self):
        return self.request.tenant
