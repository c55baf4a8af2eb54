"""Asking who is at the keyboard before a change to the account's second factors (adding or removing
the authenticator app or a security key, printing new recovery codes): a current authenticator code
or the password, like GitHub's "sudo mode" (docs/two-factor.md, "Confirm it's you").

A confirmation, or a sign-in, holds for REAUTHENTICATE_MINUTES on this session (tenants/two_factor.py
keeps the stamp): someone at a screen left signed in longer than that is asked again. An account with
neither a password nor an authenticator app (single sign-on with security keys only) confirms by
signing in again, which asks for its key."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from core.client_address import client_address
from tenants import authenticator, login_throttle, two_factor
from tenants.login_backends import LOCKED_UNTIL_ATTR

from .oidc import safe_next, sso_context
from .two_factor_forms import ReauthenticateForm


def locked(request, until) -> HttpResponse:
    # SignInLockMiddleware turns this mark into the 429 page passwords get.
    setattr(request, LOCKED_UNTIL_ATTR, until)
    return HttpResponse(status=429)


def _password_counts(user) -> bool:
    # With OIDC_ONLY no password is checked anywhere (docs/sso.md): one left from before is no proof.
    return not settings.OIDC_ONLY and user.has_usable_password()


def can_reauthenticate(user) -> bool:
    """Whether ``reauthenticated`` has anything to ask: an account signed in only through single
    sign-on, with security keys and no app, has neither a password nor a code to give."""
    return _password_counts(user) or authenticator.totp_device(user) is not None


def reauthenticated(request, form, field: str = "confirmation") -> HttpResponse | bool:
    """A current authenticator code or the password; a wrong one counts as a failed sign-in, so a
    screen left signed in cannot be used to guess the password. Answers True (and the session counts
    as recently confirmed), False (the form then carries the error) or the 429 answer of a paused
    sign-in."""
    user = request.user
    keys = {"username": user.get_username(), "address": client_address(request)}
    until = login_throttle.locked_until(**keys)
    if until is not None:
        return locked(request, until)
    text = form.cleaned_data[field]
    if authenticator.totp_verify(user=user, code=text) or (_password_counts(user) and user.check_password(text)):
        two_factor.mark_confirmed(request)
        return True
    until = login_throttle.record_failure(**keys)
    if until is not None:
        return locked(request, until)
    form.add_error(field, "That is neither a current authenticator code nor your password.")
    return False


def confirm_url(next_url: str) -> str:
    """The "confirm it's you" page, coming back to ``next_url`` (for pages reached by GET and the
    security keys' JSON endpoints, which answer 403 with it)."""
    return reverse("account_confirm") + "?" + urlencode({"next": next_url})


def _confirm_page(request, *, form, action: str, what: str, next_url: str = "", status: int = 200) -> HttpResponse:
    context = {
        "form": form,
        "action": action,
        "what": what,
        "next": next_url,
        "can_reauthenticate": can_reauthenticate(request.user),
        "minutes": int(settings.REAUTHENTICATE.total_seconds() // 60),
        # Signing in again is the confirmation of an account with nothing else to give (module docstring).
        **sso_context(request, next_url or reverse("account_security")),
    }
    response = render(request, "account/confirm.html", context, status=status)
    add_never_cache_headers(response)
    return response


def confirm_first(request, *, what: str, prefix: str = "", next_url: str = "") -> HttpResponse | None:
    """The one check before a change to second factors, for a POST to ``request.path``: None when the
    session confirmed recently or this POST carries a right confirmation (the change then goes ahead);
    else the answer to send: the confirm page, whose form posts back here (200), its error (400),
    or a paused sign-in's 429. Nothing is changed before None is answered."""
    if two_factor.recently_confirmed(request):
        return None
    page = {"action": request.path, "what": what, "next_url": next_url}
    form = ReauthenticateForm(prefix=prefix or None)
    if form.add_prefix("confirmation") not in request.POST or not can_reauthenticate(request.user):
        return _confirm_page(request, form=form, **page)
    form = ReauthenticateForm(request.POST, prefix=prefix or None)
    checked = form.is_valid() and reauthenticated(request, form)
    if isinstance(checked, HttpResponse):
        return checked
    if not checked:
        return _confirm_page(request, form=form, status=400, **page)
    return None


@login_required
@require_http_methods(["GET", "POST"])
@sensitive_post_parameters()  # codes and passwords stay out of error reports
def confirm(request):
    """The page on its own, for what cannot post back (a page reached by GET, the security keys'
    script): it goes on to ``next`` once confirmed."""
    next_url = safe_next(request, request.POST.get("next") or request.GET.get("next") or reverse("account_security"))
    answer = confirm_first(request, what="change your second factors", next_url=next_url)
    return answer or HttpResponseRedirect(next_url)
