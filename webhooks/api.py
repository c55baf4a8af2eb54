"""The webhook API: `/api/v1/webhooks/` and `/api/v1/webhooks/{id}/`, plus the delivery log.

An API key speaks for its whole tenant (as for policies and secrets), so any key of the tenant may
manage its webhooks. The signing secret is in the creation response only.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.api.base import TenantAPIView
from core.api.contract import PAGE_PARAMETERS, known_query
from core.api.fields import StrictBooleanField, StrictCharField, StrictSerializer
from core.api.pagination import IdCursorPagination
from tenants.audit import Actor

from . import services
from .access import delivery_for, webhook_for
from .events import EVENTS
from .models import Webhook, WebhookDelivery


class WebhookIn(StrictSerializer):
    url = StrictCharField(max_length=services.MAX_URL_LENGTH)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENTS), allow_empty=False, min_length=1, max_length=20
    )
    enabled = StrictBooleanField(required=False, default=True)
    description = StrictCharField(max_length=services.MAX_DESCRIPTION, required=False, allow_blank=True, default="")


class WebhookPatch(WebhookIn):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False
            field.default = serializers.empty


class WebhookOut(serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = ["id", "url", "events", "enabled", "description", "secret_hint", "created_at"]
        read_only_fields = fields  # an answer: every field is always there


class WebhookCreatedOut(WebhookOut):
    secret = serializers.CharField(help_text="The signing secret. Shown in this response only.")

    class Meta(WebhookOut.Meta):
        fields = [*WebhookOut.Meta.fields, "secret"]
        read_only_fields = fields


class DeliveryOut(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "delivery_id",
            "event",
            "status",
            "response_code",
            "attempts",
            "latency_ms",
            "last_error",
            "created_at",
            "last_attempt_at",
            "next_attempt_at",
            "redelivery_of",
            "payload",
        ]
        read_only_fields = fields


class WebhookListView(TenantAPIView):
    pagination_class = IdCursorPagination

    @extend_schema(responses=WebhookOut(many=True))
    def get(self, request):
        known_query(request, PAGE_PARAMETERS)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(Webhook.objects.filter(tenant=self.tenant), request, view=self)
        return paginator.get_paginated_response(WebhookOut(page, many=True).data)

    @extend_schema(request=WebhookIn, responses={201: WebhookCreatedOut})
    def post(self, request):
        serializer = WebhookIn(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook, secret = services.webhook_create(
            tenant=self.tenant, actor=Actor.from_request(request), **serializer.validated_data
        )
        body = {**WebhookOut(webhook).data, "secret": secret}
        return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class WebhookDetailView(TenantAPIView):
    @extend_schema(responses=WebhookOut)
    def get(self, request, pk: int):
        return Response(WebhookOut(webhook_for(self.tenant, pk)).data)

    @extend_schema(request=WebhookPatch, responses=WebhookOut)
    def patch(self, request, pk: int):
        webhook = webhook_for(self.tenant, pk)
        serializer = WebhookPatch(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook = services.webhook_update(
            webhook=webhook, actor=Actor.from_request(request), **serializer.validated_data
        )
        return Response(WebhookOut(webhook).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.webhook_delete(webhook=webhook_for(self.tenant, pk), actor=Actor.from_request(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(TenantAPIView):
    pagination_class = IdCursorPagination

    @extend_schema(responses=DeliveryOut(many=True))
    def get(self, request, pk: int):
        webhook = webhook_for(self.tenant, pk)
        known_query(request, PAGE_PARAMETERS)
        paginator = self.pagination_class()
        qs = WebhookDelivery.objects.filter(tenant=self.tenant, webhook=webhook)
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(DeliveryOut(page, many=True).data)


class RedeliverView(TenantAPIView):
    @extend_schema(request=None, responses={202: DeliveryOut})
    def post(self, request, pk: int, delivery_pk: int):
        delivery = delivery_for(webhook_for(self.tenant, pk), delivery_pk)
        again = services.delivery_redeliver(delivery=delivery, actor=Actor.from_request(request))
        again.refresh_from_db()
        return Response(DeliveryOut(again).data, status=status.HTTP_202_ACCEPTED)
