"""What the two-factor section of the account security page and the Members page show."""

from tenants import authenticator, two_factor
from tenants.models import TotpDevice, WebAuthnCredential

from .two_factor_forms import ReauthenticateForm


def two_factor_context(request) -> dict:
    user = request.user
    return {
        "totp_device": authenticator.totp_device(user),
        "recovery_codes_left": authenticator.recovery_codes_left(user),
        "has_second_factor": two_factor.has_second_factor(user),
        "two_factor_required_by": two_factor.enrolment_required_by(request),
        "regenerate_form": ReauthenticateForm(prefix="regenerate"),
        "remove_form": ReauthenticateForm(prefix="remove"),
    }


def members_two_factor_context(memberships) -> dict:
    """Which of these members have a second factor: two queries, whatever the number of members."""
    users = [m.user_id for m in memberships]
    with_factor = set(
        TotpDevice.objects.filter(user_id__in=users, confirmed_at__isnull=False).values_list("user_id", flat=True)
    ) | set(WebAuthnCredential.objects.filter(user_id__in=users).values_list("user_id", flat=True))
    return {"two_factor_user_ids": with_factor}
