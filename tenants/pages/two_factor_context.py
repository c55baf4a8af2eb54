"""What the two-factor section of the account security page and the Members page show."""

from django.contrib.auth import get_user_model
from django.db.models import Q

from tenants import authenticator, two_factor

from .reauthenticate import can_reauthenticate
from .two_factor_forms import ReauthenticateForm


def two_factor_context(request) -> dict:
    user = request.user
    return {
        "totp_device": authenticator.totp_device(user),
        "recovery_codes_left": authenticator.recovery_codes_left(user),
        "has_second_factor": two_factor.has_second_factor(user),
        "two_factor_required_by": two_factor.enrolment_required_by(request),
        "can_reauthenticate": can_reauthenticate(user),
        # Within REAUTHENTICATE of a sign-in or a confirmation the forms ask nothing more (reauthenticate.py).
        "recently_confirmed": two_factor.recently_confirmed(request),
        "regenerate_form": ReauthenticateForm(prefix="regenerate"),
        "remove_form": ReauthenticateForm(prefix="remove"),
    }


def members_two_factor_context(memberships) -> dict:
    """Which of these members have a second factor: one query, whatever the number of members."""
    with_factor = (
        get_user_model()
        .objects.filter(pk__in=[m.user_id for m in memberships])
        .filter(Q(totp_device__confirmed_at__isnull=False) | Q(webauthn_credentials__isnull=False))
        .values_list("pk", flat=True)
        .distinct()
    )
    return {"two_factor_user_ids": set(with_factor)}
