"""One FilterSet per list, shared by the pages, the API and the exports."""

from datetime import UTC

import django_filters as filters
from django import forms
from django.db.models import Exists, OuterRef
from django_filters.fields import IsoDateTimeField

from tenants.models import AuditEvent

from .models import Action, Evaluation, Phase, ReviewState, Run

MAX_ID = 2**63 - 1


#: what a moment that exists only past the calendar's ends in UTC is told (also the replay's bodies)
OUT_OF_RANGE_IN_UTC = "Must be between the years 1 and 9999 in UTC."


class MomentField(IsoDateTimeField):
    """An ISO 8601 moment, in UTC.

    Python accepts UTC offsets up to ±24 h, PostgreSQL only up to about ±16 h: an offset such as
    -21:53 reached the database as written and failed there (a 500). In UTC it is just a moment;
    one that UTC cannot hold ("9999-12-31T23:59:59-01:00" is in the year 10000 there, also a 500
    until 2026-12-06) is a bad value of its field, not a server error.
    """

    default_error_messages = {"out_of_range": OUT_OF_RANGE_IN_UTC}

    def to_python(self, value):
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(self.error_messages["out_of_range"], code="out_of_range") from None


class MomentFilter(filters.IsoDateTimeFilter):
    field_class = MomentField


class IdFilter(filters.NumberFilter):
    """A row id: a whole number in the database's range (a huge one overflowed SQLite: a 500)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


class _Base(filters.FilterSet):
    since = MomentFilter(field_name="created_at", lookup_expr="gte", label="Since")
    until = MomentFilter(field_name="created_at", lookup_expr="lt", label="Until")


# ?shadow=true (or 1): only what shadow policies said; false (or 0), or no parameter: only enforced
# evaluations, so shadow verdicts are never mixed into the enforced lists, exports and counts.
SHADOW_CHOICES = [("true", "Shadow only"), ("false", "Enforced only"), ("1", "Shadow only"), ("0", "Enforced only")]


class EvaluationFilter(_Base):
    shadow = filters.ChoiceFilter(choices=SHADOW_CHOICES, method="filter_shadow", label="Shadow policies")
    action = filters.MultipleChoiceFilter(choices=Action.choices, label="Action")
    phase = filters.ChoiceFilter(choices=Phase.choices, label="Phase")
    agent = filters.CharFilter(field_name="agent_name", label="Agent")
    policy = filters.CharFilter(method="filter_policy", label="Policy (id or name)")
    review_state = filters.ChoiceFilter(choices=ReviewState.choices, label="Review")
    run = IdFilter(field_name="run_id", label="Run")
    source = filters.ChoiceFilter(choices=Evaluation.Source.choices, label="Source")

    class Meta:
        model = Evaluation
        fields = []

    def filter_shadow(self, queryset, name, value):
        return queryset.filter(shadow=value in ("true", "1"))

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if not self.form.cleaned_data.get("shadow"):
            queryset = queryset.filter(shadow=False)
        return queryset

    def filter_policy(self, queryset, name, value):
        value = value.strip()
        # isascii: "²".isdigit() is true but int("²") raises.
        if value.isascii() and value.isdigit():
            pk = int(value)
            return queryset.filter(policy_ref=pk) if pk <= MAX_ID else queryset.none()
        return queryset.filter(policy_name=value)


class ViolationFilter(EvaluationFilter):
    action = filters.ChoiceFilter(
        choices=[(Action.WARN, "warn"), (Action.BLOCK, "block")], label="Action", method="filter_action"
    )

    def filter_action(self, queryset, name, value):
        return queryset.filter(action=value)

    @property
    def qs(self):
        return super().qs.filter(action__in=(Action.WARN, Action.BLOCK))


class EvaluationExportFilter(EvaluationFilter):
    # Resuming an interrupted download: the rows after the last id received (governance/exports.py).
    after_id = IdFilter(field_name="id", lookup_expr="gt", label="After id")


class RunFilter(filters.FilterSet):
    agent = filters.CharFilter(field_name="agent_name", label="Agent")
    workflow = filters.CharFilter(field_name="workflow_name", label="Workflow")
    status = filters.ChoiceFilter(choices=Run.Status.choices, label="Status")
    final_action = filters.ChoiceFilter(choices=Action.choices, label="Final action")
    policy = filters.CharFilter(method="filter_policy", label="Policy (id or name)")
    since = MomentFilter(field_name="started_at", lookup_expr="gte", label="Since")
    until = MomentFilter(field_name="started_at", lookup_expr="lt", label="Until")

    class Meta:
        model = Run
        fields = []

    def filter_policy(self, queryset, name, value):
        """The runs the policy (id or name, as on the evaluations list) gave an enforced verdict in."""
        said = EvaluationFilter.filter_policy(self, Evaluation.objects.filter(shadow=False), name, value)
        return queryset.filter(Exists(said.filter(run_id=OuterRef("pk"))))


class AuditFilter(_Base):
    action = filters.CharFilter(method="filter_action", label="Action (prefix, e.g. policies.)")
    actor = filters.CharFilter(field_name="actor_label", label="Actor")
    object_type = filters.CharFilter(field_name="object_type", label="Object type")
    request_id = filters.CharFilter(field_name="request_id", label="Request id")

    class Meta:
        model = AuditEvent
        fields = []

    def filter_action(self, queryset, name, value):
        return queryset.filter(action__startswith=value.strip())


class AuditExportFilter(AuditFilter):
    after_id = IdFilter(field_name="id", lookup_expr="gt", label="After id")
