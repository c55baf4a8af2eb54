"""The webhook form. It only collects input: webhooks.services validates and says what is wrong."""

from django import forms

from tenants.pages.forms import ServiceErrorsMixin
from webhooks.events import EVENTS


class WebhookForm(ServiceErrorsMixin, forms.Form):
    url = forms.CharField(
        label="URL",
        max_length=2000,
        widget=forms.URLInput(
            attrs={"placeholder": "https://example.com/groundrule-events", "autocomplete": "off", "spellcheck": "false"}
        ),
        help_text="https:// (a Slack incoming-webhook URL gets Slack's message format).",
    )
    events = forms.MultipleChoiceField(
        label="Events", choices=[(e, e) for e in EVENTS], widget=forms.CheckboxSelectMultiple
    )
    description = forms.CharField(label="Description", max_length=200, required=False)
    enabled = forms.BooleanField(label="Enabled", required=False, initial=True)
