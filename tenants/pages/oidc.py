"""The sign-in page with its "Sign in with …" button, and the two OpenID Connect steps behind it:
/accounts/oidc/login/ sends the browser to the identity provider, /accounts/oidc/callback/ brings
it back (tenants/oidc.py checks it, tenants/sso.py picks the account)."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.views import LoginView
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from tenants import oidc, sso, two_factor
from tenants.models import Membership

PASSWORDS_OFF = "Password sign-in is turned off on this server. Sign in with {name} instead."


def safe_next(request, candidate) -> str:
    if isinstance(candidate, str) and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return settings.LOGIN_REDIRECT_URL


def sso_context(request, next_url: str) -> dict:
    if not oidc.configured():
        return {}
    query = "?" + urlencode({"next": next_url}) if next_url else ""
    return {"sso_name": settings.OIDC_NAME, "sso_url": reverse("oidc_login") + query, "sso_only": settings.OIDC_ONLY}


class SignInView(LoginView):
    """Django's sign-in page, with the SSO button when it is configured; with OIDC_ONLY the button
    alone, and a password posted anyway is refused before any account is looked at."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(sso_context(self.request, context.get("next", "")))
        return context

    def post(self, request, *args, **kwargs):
        if settings.OIDC_ONLY:
            context = self.get_context_data(form=self.get_form_class()(request))
            context["passwords_off"] = PASSWORDS_OFF.format(name=settings.OIDC_NAME)
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        # A right password for an account with a second factor signs nobody in yet (docs/two-factor.md).
        user = form.get_user()
        if two_factor.has_second_factor(user):
            two_factor.begin(self.request, user, backend=user.backend, next_url=self.get_success_url())
            return redirect("two_factor_sign_in")
        return super().form_valid(form)


def _refused(request, refusal: oidc.Refused):
    sso.record_refusal(refusal)
    response = render(
        request,
        "registration/sso_refused.html",
        {"message": refusal.message, "reason": refusal.reason, **sso_context(request, "")},
        status=refusal.status,
    )
    add_never_cache_headers(response)
    return response


def _not_configured(request):
    context = {"message": "Single sign-on is not configured on this server.", "reason": "not_configured"}
    return render(request, "registration/sso_refused.html", context, status=404)


@never_cache
@require_GET
def oidc_login(request):
    if not oidc.configured():
        return _not_configured(request)
    try:
        url = oidc.begin(request, safe_next(request, request.GET.get("next")))
    except oidc.Refused as refusal:
        return _refused(request, refusal)
    return HttpResponseRedirect(url)


@never_cache
@require_GET
def oidc_callback(request):
    if not oidc.configured():
        return _not_configured(request)
    try:
        identity = oidc.finish(request, request.GET)
        user, _created = sso.sign_in(identity)
    except oidc.Refused as refusal:
        return _refused(request, refusal)
    if not settings.OIDC_TRUSTS_MFA and two_factor.has_second_factor(user):
        # Groundrule asks for the second factor itself unless the provider enforces one (docs/two-factor.md).
        two_factor.begin(
            request,
            user,
            backend=settings.AUTHENTICATION_BACKENDS[0],
            next_url=identity.next_url,
            first_step=two_factor.SSO,
        )
        return redirect("two_factor_sign_in")
    login(request, user)  # the one backend: the throttle's success signal runs, as for a password
    if settings.OIDC_TRUSTS_MFA:
        two_factor.mark_sso_trusted(request)
    next_url = identity.next_url
    if (
        next_url == settings.LOGIN_REDIRECT_URL
        and not Membership.objects.with_scopes_disabled().filter(user=user).exists()
    ):
        return redirect("welcome")
    return HttpResponseRedirect(next_url)
