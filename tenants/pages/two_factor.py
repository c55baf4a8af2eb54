"""Two-factor pages (docs/two-factor.md): the second step of a sign-in, and a person's own authenticator
app and recovery codes on the account security page.

The second step counts a wrong code as a failed sign-in (tenants/login_throttle.py) and, while the
account is paused from this address, refuses authenticator codes with the same 429 page as passwords.
Wrong codes and keys are also counted for the account from every address; past
LOGIN_SECOND_FACTOR_FAILURE_LIMIT the code step answers 429 on its own page, recovery code included.
A recovery code still finishes a sign-in during a pause, so a person who fumbled their app is not
locked out; a wrong recovery code during a pause ends the half sign-in, so each password that got
through buys one guess at a 50-bit code, and no new password is accepted until the pause ends.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.client_address import client_address
from tenants import authenticator, login_throttle, two_factor

from . import recovery_codes_next
from .reauthenticate import confirm_first, confirm_url, locked
from .two_factor_forms import (
    WRONG_CODE,
    WRONG_RECOVERY_CODE,
    AuthenticatorCodeForm,
    RecoveryCodeForm,
)

EXPIRED = "That sign-in took too long or was already finished. Sign in again."
CODES_PAUSED = (
    "Too many wrong codes and security keys for this account: they are paused for a while. "
    "Use a recovery code, or try again later."
)


def _no_store(response: HttpResponse) -> HttpResponse:
    add_never_cache_headers(response)
    return response


# --- the second step of a sign-in ---------------------------------------------------------------


def _step_page(request, sign_in, *, code_form=None, recovery_form=None, status=200):
    methods = two_factor.enrolled_methods(sign_in.user)
    paused_until = login_throttle.second_factor_locked_until(username=sign_in.user.get_username())
    context = {
        "second_factor_paused_until": paused_until,
        "username": sign_in.user.get_username(),
        "code_form": code_form or AuthenticatorCodeForm(),
        "recovery_form": recovery_form or RecoveryCodeForm(),
        "has_totp": two_factor.TOTP in methods,
        "has_webauthn": two_factor.WEBAUTHN in methods,
        "has_recovery_codes": two_factor.RECOVERY_CODE in methods,
    }
    return _no_store(render(request, "registration/two_factor.html", context, status=status))


def _expired(request):
    messages.info(request, EXPIRED)
    return redirect("login")


def _throttle_keys(request, sign_in) -> dict:
    return {"username": sign_in.user.get_username(), "address": client_address(request)}


@never_cache
@require_http_methods(["GET", "POST"])
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def sign_in_code(request):
    sign_in = two_factor.pending(request)
    if sign_in is None:
        return _expired(request)
    if request.method == "GET":
        return _step_page(request, sign_in)
    form = AuthenticatorCodeForm(request.POST)
    if not form.is_valid():
        return _step_page(request, sign_in, code_form=form, status=400)
    keys = _throttle_keys(request, sign_in)
    until = login_throttle.locked_until(**keys)
    if until is not None:
        return locked(request, until)
    if login_throttle.second_factor_locked_until(username=keys["username"]) is not None:
        # Too many wrong codes and keys for this account from everywhere (module docstring): the
        # step page stays, with its recovery code, and says why; the code is not even checked.
        return _second_factor_paused(request, sign_in, form)
    if authenticator.totp_verify(user=sign_in.user, code=form.cleaned_data["code"]):
        return HttpResponseRedirect(two_factor.complete(request, sign_in, method=two_factor.TOTP))
    until = login_throttle.record_second_factor_failure(user=sign_in.user, address=keys["address"])
    if until is not None:
        return locked(request, until)
    if login_throttle.second_factor_locked_until(username=keys["username"]) is not None:
        return _second_factor_paused(request, sign_in, form)
    form.add_error("code", WRONG_CODE)
    return _step_page(request, sign_in, code_form=form, status=400)


def _second_factor_paused(request, sign_in, form) -> HttpResponse:
    form.add_error("code", CODES_PAUSED)
    response = _step_page(request, sign_in, code_form=form, status=429)
    until = login_throttle.second_factor_locked_until(username=sign_in.user.get_username())
    response["Retry-After"] = str(login_throttle.retry_after_seconds(until)) if until else "1"
    return response


@never_cache
@require_POST
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def sign_in_recovery_code(request):
    sign_in = two_factor.pending(request)
    if sign_in is None:
        return _expired(request)
    form = RecoveryCodeForm(request.POST)
    if not form.is_valid():
        return _step_page(request, sign_in, recovery_form=form, status=400)
    keys = _throttle_keys(request, sign_in)
    paused_until = login_throttle.locked_until(**keys)
    if authenticator.recovery_code_use(user=sign_in.user, code=form.cleaned_data["recovery_code"]):
        next_url = two_factor.complete(request, sign_in, method=two_factor.RECOVERY_CODE)
        left = authenticator.recovery_codes_left(request.user)
        messages.warning(
            request,
            f"You signed in with a recovery code; {left} left. "
            "If you lost your authenticator, set up a new one and print new codes on Account security.",
        )
        return HttpResponseRedirect(next_url)
    if paused_until is not None:
        two_factor.cancel(request)  # one guess per password during a pause (module docstring)
        return locked(request, paused_until)
    until = login_throttle.record_failure(**keys)
    if until is not None:
        return locked(request, until)
    form.add_error("recovery_code", WRONG_RECOVERY_CODE)
    return _step_page(request, sign_in, recovery_form=form, status=400)


@require_POST
def sign_in_cancel(request):
    two_factor.cancel(request)
    return redirect("login")


# --- a person's own authenticator app ---------------------------------------------------------------


def _recovery_codes_page(request, codes: list[str], *, enrolled: bool) -> HttpResponse:
    context = {"codes": codes, "enrolled": enrolled}
    return _no_store(render(request, "account/recovery_codes.html", context))


@login_required
@require_GET
def recovery_codes_new(request):
    codes = request.session.pop(recovery_codes_next.SESSION_KEY, None)
    if not codes:
        return redirect("account_security")  # shown once: a reload does not show them again
    return _recovery_codes_page(request, codes, enrolled=True)


@login_required
@require_POST
def setup_start(request):
    asked = confirm_first(request, what="set up an authenticator app")
    if asked is not None:
        return asked
    try:
        authenticator.totp_begin(user=request.user)
    except authenticator.AlreadyEnrolled:
        messages.info(request, "Your authenticator app is already set up. Remove it first to set up another.")
        return redirect("account_security")
    return redirect("two_factor_setup")


def _setup_page(request, device, form, status=200) -> HttpResponse:
    # Focus stays at the top: a screen reader reads the key before reaching the field.
    form.fields["code"].widget.attrs.pop("autofocus", None)
    uri = authenticator.provisioning_uri(device)
    context = {
        "form": form,
        "qr_svg": authenticator.qr_svg(uri),
        "secret_grouped": authenticator.secret_grouped(authenticator.secret_of(device)),
        "issuer": authenticator.ISSUER,
    }
    return _no_store(render(request, "account/two_factor_setup.html", context, status=status))


@login_required
@require_http_methods(["GET", "POST"])
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def setup(request):
    device = authenticator.pending_device(request.user)
    if device is None:
        # Nothing being set up (finished, or never started): the secret is never shown again.
        return redirect("account_security")
    if not two_factor.recently_confirmed(request):
        # Started, then left longer than the confirmation lasts: the secret is shown to no one else.
        return redirect(confirm_url(request.path))
    if request.method == "GET":
        return _setup_page(request, device, AuthenticatorCodeForm())
    form = AuthenticatorCodeForm(request.POST)
    if not form.is_valid():
        return _setup_page(request, device, form, status=400)
    codes = authenticator.totp_confirm(user=request.user, code=form.cleaned_data["code"], request=request)
    if codes is None:
        form.add_error("code", WRONG_CODE)
        return _setup_page(request, device, form, status=400)
    return _recovery_codes_page(request, codes, enrolled=True)


@login_required
@require_POST
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def recovery_codes_regenerate(request):
    if not two_factor.has_second_factor(request.user):
        messages.error(request, "Set up an authenticator app first: recovery codes are its backup.")
        return redirect("account_security")
    asked = confirm_first(request, what="print new recovery codes", prefix="regenerate")
    if asked is not None:
        return asked
    codes = authenticator.recovery_codes_regenerate(user=request.user, request=request)
    return _recovery_codes_page(request, codes, enrolled=False)


@login_required
@require_POST
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def remove(request):
    if authenticator.totp_device(request.user) is None:
        messages.info(request, "There is no authenticator app to remove.")
        return redirect("account_security")
    asked = confirm_first(request, what="remove your authenticator app", prefix="remove")
    if asked is not None:
        return asked
    authenticator.totp_remove(user=request.user, request=request)
    messages.success(request, "Authenticator app removed.")
    return redirect("account_security")
