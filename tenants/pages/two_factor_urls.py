"""Two-factor pages (docs/two-factor.md); see tenants/pages/account_urls.py."""

from django.urls import path

from . import two_factor, two_factor_admin

urlpatterns = [
    # The second step of a sign-in (not signed in yet: under /accounts/ with the sign-in page).
    path("accounts/two-factor/", two_factor.sign_in_code, name="two_factor_sign_in"),
    path("accounts/two-factor/recovery/", two_factor.sign_in_recovery_code, name="two_factor_recovery"),
    path("accounts/two-factor/cancel/", two_factor.sign_in_cancel, name="two_factor_cancel"),
    # A person's own authenticator app (under /account/, which the require-2FA rule always allows).
    path("account/two-factor/start/", two_factor.setup_start, name="two_factor_setup_start"),
    path("account/two-factor/setup/", two_factor.setup, name="two_factor_setup"),
    path(
        "account/two-factor/recovery-codes/",
        two_factor.recovery_codes_regenerate,
        name="two_factor_recovery_codes",
    ),
    path("account/two-factor/recovery-codes/new/", two_factor.recovery_codes_new, name="two_factor_recovery_codes_new"),
    path("account/two-factor/remove/", two_factor.remove, name="two_factor_remove"),
    # Settings > Members (matched before the settings URLs, which governance/pages/urls.py includes).
    path("settings/members/two-factor/", two_factor_admin.require_two_factor, name="settings_require_two_factor"),
    path(
        "settings/members/<int:pk>/two-factor/reset/",
        two_factor_admin.member_reset,
        name="settings_member_two_factor_reset",
    ),
]
