"""Forms of the two-factor pages: they check the shape of what was typed; tenants/authenticator.py
checks whether it is right."""

from django import forms
from django.core.exceptions import ValidationError

from tenants.authenticator import is_code_shaped, is_recovery_code_shaped, normalise_code

CODE_SHAPE = "Enter the 6-digit code your authenticator app shows now."
RECOVERY_SHAPE = "Enter one of your recovery codes: ten letters and digits, like abcde-12345."
WRONG_CODE = "That code is not right, or it was used already. Wait for the next code and try again."
WRONG_RECOVERY_CODE = "That recovery code is not right, or it was used already."


def _code_input(autocomplete: str = "one-time-code", **attrs):
    return forms.TextInput(
        attrs={"autocomplete": autocomplete, "inputmode": "numeric", "spellcheck": "false", "class": "mono", **attrs}
    )


class AuthenticatorCodeForm(forms.Form):
    code = forms.CharField(label="Authenticator code", max_length=20, widget=_code_input(autofocus=True))

    def clean_code(self) -> str:
        code = normalise_code(self.cleaned_data["code"])
        if not is_code_shaped(code):
            raise ValidationError(CODE_SHAPE)
        return code


class RecoveryCodeForm(forms.Form):
    recovery_code = forms.CharField(
        label="Recovery code",
        max_length=40,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "class": "mono"}),
    )

    def clean_recovery_code(self) -> str:
        code = self.cleaned_data["recovery_code"]
        if not is_recovery_code_shaped(code):
            raise ValidationError(RECOVERY_SHAPE)
        return code


class ReauthenticateForm(forms.Form):
    """Regenerating recovery codes or removing the app: a current authenticator code, or the password."""

    confirmation = forms.CharField(
        label="Authenticator code or your password",
        max_length=4096,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        help_text="Proves it is you at the keyboard, not someone at a screen you left signed in.",
    )


class RequireTwoFactorForm(forms.Form):
    require_two_factor = forms.BooleanField(label="Require two-factor authentication for members", required=False)
