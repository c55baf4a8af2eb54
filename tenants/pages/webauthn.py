"""Security keys and passkeys on the account security page, and the key on a sign-in's second step
(tenants/webauthn.py holds the ceremonies; docs/security-keys.md).

The ceremony endpoints speak JSON to config/static/js/webauthn.js; a problem is a 4xx JSON answer
``{"error": message, "field": name}``. Removing a key is a plain form, which works without JavaScript.
"""

import json
import math

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_POST

from core.client_address import client_address
from tenants import login_throttle, two_factor, webauthn
from tenants.models import WebAuthnCredential

from .reauthenticate import confirm_first, confirm_url
from .recovery_codes_next import show_recovery_codes_next


def webauthn_context(request) -> dict:
    """The security page's "Security keys" section (account/_webauthn.html)."""
    return {
        "webauthn_keys": list(WebAuthnCredential.objects.filter(user=request.user).order_by("created_at", "pk")),
        "webauthn_name_max_length": webauthn.NAME_MAX_LENGTH,
    }


def _error(message: str, *, field: str = "", status: int = 400, more: dict | None = None, **headers) -> JsonResponse:
    response = JsonResponse({"error": message, "field": field, **(more or {})}, status=status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _options(text: str) -> HttpResponse:
    response = HttpResponse(text, content_type="application/json")
    response["Cache-Control"] = "no-store"
    return response


def _body(request) -> dict:
    if request.content_type != "application/json":
        raise webauthn.Refused("Security keys need JavaScript in your browser: send the key's answer as JSON.")
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise webauthn.Refused("The request body is not valid JSON.", field="body") from exc
    if not isinstance(body, dict):
        raise webauthn.Refused("The request body must be a JSON object.", field="body")
    return body


def _signed_in_json(view):
    """login_required for the JSON endpoints: a 401 the script can show, not the sign-in page."""

    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return _error("Sign in first.", status=401)
        return view(request, *args, **kwargs)

    return wrapped


def _recently_confirmed_json(view):
    """Adding a key needs a recent "confirm it's you" (tenants/pages/reauthenticate.py); the script
    cannot show the confirm page inside a JSON answer, so it is sent there by ``confirm_url``."""

    def wrapped(request, *args, **kwargs):
        if not two_factor.recently_confirmed(request):
            back = confirm_url(reverse("account_security") + "#security-keys")
            return _error("Confirm it's you to add a security key.", status=403, more={"confirm_url": back})
        return view(request, *args, **kwargs)

    return wrapped


# --- the security page: add and remove keys -----------------------------------------------------


@never_cache
@require_POST
@_signed_in_json
@_recently_confirmed_json
def register_options(request):
    return _options(webauthn.registration_options(request, request.user))


@never_cache
@require_POST
@_signed_in_json
@_recently_confirmed_json
def register(request):
    try:
        body = _body(request)
        key, codes = webauthn.register(request, request.user, name=body.get("name"), credential=body.get("credential"))
    except webauthn.Refused as refused:
        return _error(refused.message, field=refused.field, status=refused.status)
    messages.success(request, f"Security key “{key.name}” added. Your other sessions were signed out.")
    # A first second factor's recovery codes are shown once, on the page the browser goes to next.
    after = show_recovery_codes_next(request, codes) if codes else reverse("account_security")
    return JsonResponse({"id": key.pk, "name": key.name, "redirect": after}, status=201)


@login_required
@require_POST
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def remove(request, pk: int):
    """Unless this session confirmed recently, the key's Remove button opens "confirm it's you", as
    removing the authenticator app does: someone at a screen left signed in cannot strip the account's
    second factor."""
    # Another person's key is not found, exactly as a key that does not exist.
    key = get_object_or_404(WebAuthnCredential, pk=pk, user=request.user)
    asked = confirm_first(request, what=f"remove the security key “{key.name}”")
    if asked is not None:
        return asked
    name = key.name
    webauthn.remove(request, key)
    messages.success(request, f"Security key “{name}” removed. Your other sessions were signed out.")
    return redirect("account_security")


# --- the second step of a sign-in ---------------------------------------------------------------


def _locked(until, *, why: str = "Too many failed sign-ins:") -> JsonResponse:
    retry_after = login_throttle.retry_after_seconds(until)
    minutes = math.ceil(retry_after / 60)
    return _error(
        f"{why} try again in {minutes} minute{'s' if minutes != 1 else ''}.",
        status=429,
        Retry_After=str(retry_after),
    )


# Past LOGIN_SECOND_FACTOR_FAILURE_LIMIT for the account (tenants/login_throttle.py).
KEYS_PAUSED = "Too many wrong codes and security keys for this account: use a recovery code, or"


def _second_factor_paused(user) -> JsonResponse | None:
    until = login_throttle.second_factor_locked_until(username=user.get_username())
    return None if until is None else _locked(until, why=KEYS_PAUSED)


def _pending_or_error(request):
    pending = two_factor.pending(request)
    if pending is None:
        return None, _error("No sign-in is waiting for a security key: sign in with your password again.", status=403)
    if not WebAuthnCredential.objects.filter(user=pending.user).exists():
        return None, _error("This account has no security key.", status=400)
    until = login_throttle.locked_until(username=pending.user.get_username(), address=client_address(request))
    if until is not None:
        return None, _locked(until)
    paused = _second_factor_paused(pending.user)
    if paused is not None:
        return None, paused
    return pending, None


@never_cache
@require_POST
def sign_in_options(request):
    pending, error = _pending_or_error(request)
    if error is not None:
        return error
    return _options(webauthn.authentication_options(request, pending.user))


@never_cache
@require_POST
def sign_in_verify(request):
    pending, error = _pending_or_error(request)
    if error is not None:
        return error
    try:
        body = _body(request)
        webauthn.authenticate(request, pending.user, credential=body.get("credential"))
    except webauthn.Refused as refused:
        # A key that does not check out is a failed sign-in, counted as a wrong password is, and a
        # wrong second factor of the account, counted from every address.
        until = login_throttle.record_second_factor_failure(user=pending.user, address=client_address(request))
        if until is not None:
            return _locked(until)
        paused = _second_factor_paused(pending.user)
        if paused is not None:
            return paused
        return _error(refused.message, field=refused.field, status=refused.status)
    return JsonResponse({"redirect": two_factor.complete(request, pending, method=two_factor.WEBAUTHN)})
