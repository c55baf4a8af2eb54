"""POST /api/v1/grounding/decide/: what context may reach the model, under the agent's policy.

docs/grounding-context.md describes the modes.

A question, not part of a run: nothing is written. The answer is the decision (snake_case) and
``grounding_context``, the rules it was made under and the policy they came from (the first
applicable grounding policy that changes any context rule; ``policy_id`` null means defaults).
"""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import represented, validated
from core.api.fields import SafeJSONField, StrictCharField, StrictSerializer
from policies.categories.grounding_context import decide_grounding
from policies.selectors import grounding_context_for
from tenants.models import KeyScope

from .serializers import GroundingContextOut

MAX_DOCUMENTS = 1000


@extend_schema_field({"oneOf": [{"type": "object", "additionalProperties": {}}, {"type": "string", "minLength": 1}]})
class PreparedDocumentField(SafeJSONField):
    """A prepared (canonical) document as the agent describes it: an object, or its id as a string.

    Only whether there are any matters to the decision; the rest is the agent's business.
    """

    default_error_messages = {"invalid_document": "Must be an object or a non-empty string."}

    def to_internal_value(self, data):
        if not (isinstance(data, dict) or (isinstance(data, str) and data.strip())):
            self.fail("invalid_document")
        return super().to_internal_value(data)


class DecideIn(StrictSerializer):
    agent_name = StrictCharField(max_length=200)
    # Not trimmed: the text is measured and cut to max_context_chars as sent.
    retrieved_text = StrictCharField(
        required=False, allow_blank=True, allow_null=True, default="", trim_whitespace=False
    )
    prepared_documents = serializers.ListField(
        child=PreparedDocumentField(), required=False, default=list, max_length=MAX_DOCUMENTS
    )


class DecideOut(serializers.Serializer):
    retrieved_text_for_prompt = serializers.CharField(
        trim_whitespace=False,
        help_text="The retrieved text to put in the prompt (cut to max_context_chars); empty when none may go.",
    )
    include_attachments = serializers.BooleanField(help_text="Whether the prepared documents go to the model.")
    include_retrieved_text = serializers.BooleanField()
    grounding_context = GroundingContextOut()


class GroundingDecideView(TenantAPIView):
    required_scope = KeyScope.AGENT
    agent_name_field = "agent_name"

    @extend_schema(request=DecideIn, responses={200: DecideOut})
    def post(self, request):
        data = validated(DecideIn, request.data)
        context = grounding_context_for(tenant=self.tenant, agent_name=data["agent_name"])
        decision = decide_grounding(data["retrieved_text"] or "", data["prepared_documents"], context["rules"])
        return Response(represented(DecideOut, {**decision.to_dict(), "grounding_context": context}))
