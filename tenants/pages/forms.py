"""Settings forms. They only collect input: the services validate and say what is wrong."""

from django import forms
from django.core.exceptions import ValidationError

from tenants.models import Role

KNOWN_SECRET_NAMES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GROQ_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GROQ_BASE_URL",
)


class ServiceErrorsMixin:
    def add_service_errors(self, exc: ValidationError) -> None:
        if hasattr(exc, "message_dict"):
            for field, messages in exc.message_dict.items():
                target = field if field in self.fields else None
                for message in messages:
                    self.add_error(target, message)
        else:
            for message in exc.messages:
                self.add_error(None, message)


class SecretForm(ServiceErrorsMixin, forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=64,
        strip=True,
        widget=forms.TextInput(
            attrs={
                "placeholder": "OPENAI_API_KEY",
                "list": "secret-names",
                "autocomplete": "off",
                "spellcheck": "false",
                "autocapitalize": "characters",
            }
        ),
        help_text="Environment-variable style: A-Z, 0-9 and _. Setting an existing name replaces its value.",
    )
    # render_value=False: a value typed into this form is never sent back to the browser,
    # not even when the form comes back with an error.
    value = forms.CharField(
        label="Value",
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password", "spellcheck": "false"}),
        help_text="Stored encrypted. It cannot be shown again, only replaced.",
    )


class ApiKeyForm(ServiceErrorsMixin, forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "research-agent production", "autocomplete": "off"}),
        help_text="What the key is for, so you know which one to revoke.",
    )


class MemberAddForm(ServiceErrorsMixin, forms.Form):
    user = forms.CharField(
        label="Username or email",
        max_length=254,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text="The person must already have an account on this server.",
    )
    role = forms.ChoiceField(label="Role", choices=Role.choices, initial=Role.VIEWER)


class MemberRoleForm(ServiceErrorsMixin, forms.Form):
    role = forms.ChoiceField(label="Role", choices=Role.choices)
