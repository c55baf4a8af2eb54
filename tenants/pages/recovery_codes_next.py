"""Recovery codes that wait in the session for the one page load that shows them.

A security key is added by a script, whose answer is JSON: the codes of a first second factor are
kept here for ``recovery_codes_new`` (tenants/pages/two_factor.py), which pops them as it shows them.
"""

from django.urls import reverse

SESSION_KEY = "two_factor_recovery_codes_next"


def show_recovery_codes_next(request, codes: list[str]) -> str:
    """Keep ``codes`` for the next page load of the new-codes page; answers that page's URL."""
    request.session[SESSION_KEY] = codes
    return reverse("two_factor_recovery_codes_new")
