"""Settings forms. They only collect input: the services validate and say what is wrong."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.text import slugify

from tenants.models import GRANTABLE_SCOPES, KeyScope, Role
from tenants.services import ROLE_CHOICE_ERROR

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


SCOPE_HELP = {
    KeyScope.AGENT: "Agent: start runs, report, check and decide; reads only the runs it started.",
    KeyScope.READ: "Read: every read endpoint and export; changes nothing.",
    KeyScope.ADMIN: "Admin: everything, policies and secrets included. Keep it out of agents.",
}


class ApiKeyForm(ServiceErrorsMixin, forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        widget=forms.TextInput(attrs={"placeholder": "research-agent production", "autocomplete": "off"}),
        help_text="What the key is for, so you know which one to revoke.",
    )
    scope = forms.ChoiceField(
        label="Scope",
        initial=KeyScope.AGENT,
        required=False,
        choices=[(s.value, SCOPE_HELP[s]) for s in GRANTABLE_SCOPES],
        widget=forms.RadioSelect,
    )
    agents = forms.CharField(
        label="Agents",
        required=False,
        max_length=2000,
        widget=forms.TextInput(
            attrs={"placeholder": "support-*, research-agent", "autocomplete": "off", "spellcheck": "false"}
        ),
        help_text="Agent keys only: the agent names or patterns it may act for, comma-separated. Empty: any agent.",
    )
    expires_in_days = forms.IntegerField(
        label="Expires after (days)", required=False, min_value=1, help_text="Empty: never expires."
    )

    def clean_scope(self) -> str:
        # Least privilege when nothing is chosen, as for every other way of creating a key.
        return self.cleaned_data.get("scope") or KeyScope.AGENT

    def cleaned_agents(self) -> list[str]:
        return [a.strip() for a in (self.cleaned_data.get("agents") or "").split(",") if a.strip()]


class MemberAddForm(ServiceErrorsMixin, forms.Form):
    user = forms.CharField(
        label="Username or email",
        max_length=254,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        help_text="For someone who already has an account on this server; invite anyone else by email.",
    )
    role = forms.ChoiceField(
        label="Role", choices=Role.choices, initial=Role.VIEWER, error_messages={"invalid_choice": ROLE_CHOICE_ERROR}
    )


class MemberRoleForm(ServiceErrorsMixin, forms.Form):
    role = forms.ChoiceField(label="Role", choices=Role.choices)


class WorkspaceForm(ServiceErrorsMixin, forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "Acme Research", "autocomplete": "organization"}),
        help_text="Shown in the header and the workspace switcher.",
    )
    slug = forms.CharField(
        label="Slug",
        required=False,
        max_length=63,
        widget=forms.TextInput(
            attrs={
                "placeholder": "acme-research",
                "autocomplete": "off",
                "spellcheck": "false",
                "autocapitalize": "none",
            }
        ),
        help_text="A short identifier for commands (manage.py invite SLUG …): lowercase letters, digits, "
        "hyphens and underscores. Empty: made from the name.",
    )

    def clean(self):
        data = super().clean()
        if "slug" in data and not self.has_error("name"):
            slug = (data.get("slug") or "").strip().lower() or slugify(data.get("name", ""))[:63].strip("-")
            if not slug:
                self.add_error("slug", "Choose a slug: the name has no letters or digits to make one from.")
            data["slug"] = slug
        return data


class InviteForm(ServiceErrorsMixin, forms.Form):
    # It shares the Members page with MemberAddForm: its own ids keep labels and errors apart.
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "invite_%s")
        super().__init__(*args, **kwargs)

    email = forms.EmailField(
        label="Email",
        max_length=254,
        widget=forms.EmailInput(
            attrs={"autocomplete": "off", "spellcheck": "false", "placeholder": "name@example.com"}
        ),
        help_text="We email them a link that works once. You also see it once, to pass on yourself.",
    )
    role = forms.ChoiceField(
        label="Role", choices=Role.choices, initial=Role.VIEWER, error_messages={"invalid_choice": ROLE_CHOICE_ERROR}
    )


class SetPasswordForm(ServiceErrorsMixin, forms.Form):
    """Collects the password twice; the invitation service runs the password validators."""

    password = forms.CharField(
        label="Password",
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    password2 = forms.CharField(
        label="Confirm password",
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password2") and data["password"] != data["password2"]:
            self.add_error("password2", "The two passwords do not match.")
        return data
