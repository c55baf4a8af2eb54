"""Sign-in throttling that an attacker cannot turn against the people it protects.

Failures are counted three ways (docs/security.md, "Sign-in"):

- an account from one address (LOGIN_FAILURE_LIMIT): the ordinary lockout, which stops guessing
  from one place without touching the same account anywhere else;
- an address, whatever accounts it tries (LOGIN_ADDRESS_FAILURE_LIMIT): stops one address spraying
  many accounts;
- an account, from every address (LOGIN_ACCOUNT_FAILURE_LIMIT): when it is reached the account is
  *under attack*, and from then until the cool-off ends each address gets a single failure on it
  instead of LOGIN_FAILURE_LIMIT. A hard account-wide lock would let anyone with a few addresses
  keep a person out; this keeps distributed guessing to one try per address while the person, from
  an address that has not failed, still signs in with the right password.

Wrong second factors (authenticator codes, security keys) are counted once more, for the account
from every address (LOGIN_SECOND_FACTOR_FAILURE_LIMIT, docs/two-factor.md): a password known to many
addresses would otherwise buy each of them its own guesses at a 6-digit code. When it is reached the
code and key steps of that account are paused for everyone until the cool-off ends; a recovery code
(some 50 bits) still finishes a sign-in, and single sign-on that the provider vouches for
(OIDC_TRUSTS_MFA) never reaches the step. The pause is audited once, in the person's workspaces.

A lock starts when its limit is reached and lasts LOGIN_COOLOFF_MINUTES; attempts made during it are
refused without being counted, so they cannot extend it. Counts older than the cool-off start over.
Rows hold keyed hashes, not the usernames or addresses themselves.
"""

import hashlib
import hmac
import logging
import math
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .audit import Actor, audit_person
from .models import LoginThrottle

log = logging.getLogger(__name__)


class Scope(StrEnum):
    PAIR = "account from one address"
    ADDRESS = "address"
    ACCOUNT = "account"


def _hash(kind: str, value: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()


def _account(username: str | None) -> str:
    return _hash("account", (username or "").strip().casefold())


def _rows_of(username: str | None, address: str) -> dict[Scope, dict[str, str]]:
    account, where = _account(username), _hash("address", address)
    return {
        Scope.PAIR: {"account": account, "address": where},
        Scope.ADDRESS: {"account": "", "address": where},
        Scope.ACCOUNT: {"account": account, "address": ""},
    }


def _limit(scope: Scope, *, under_attack: bool) -> int:
    if scope == Scope.PAIR:
        return 1 if under_attack else settings.LOGIN_FAILURE_LIMIT
    return settings.LOGIN_ADDRESS_FAILURE_LIMIT if scope == Scope.ADDRESS else settings.LOGIN_ACCOUNT_FAILURE_LIMIT


def _holds(row: LoginThrottle | None, now: datetime) -> bool:
    return bool(row and row.locked_until and row.locked_until > now)


def _find(username: str | None, address: str) -> dict[Scope, LoginThrottle]:
    wanted = _rows_of(username, address)
    found = {}
    for row in LoginThrottle.objects.filter(
        account__in={"", wanted[Scope.PAIR]["account"]}, address__in={"", wanted[Scope.PAIR]["address"]}
    ):
        for scope, fields in wanted.items():
            if (row.account, row.address) == (fields["account"], fields["address"]):
                found[scope] = row
    return found


def _opens_at(rows: dict[Scope, LoginThrottle], now: datetime) -> datetime | None:
    # The account's own pause is not a lock for everyone: it lowers each address's allowance (above).
    holding = [row.locked_until for scope, row in rows.items() if scope != Scope.ACCOUNT and _holds(row, now)]
    return max(holding) if holding else None  # type: ignore[type-var]


def locked_until(*, username: str | None, address: str, now: Callable[[], datetime] | None = None) -> datetime | None:
    """When sign-in for this account from this address opens again, or None if it is open now."""
    moment = (now or timezone.now)()
    rows = _find(username, address)
    return _opens_at(rows, moment)


def record_failure(*, username: str | None, address: str, now: Callable[[], datetime] | None = None) -> datetime | None:
    """Counts one failure; answers when sign-in opens again if this failure paused it, else None."""
    moment = (now or timezone.now)()
    cooloff = settings.LOGIN_COOLOFF
    with transaction.atomic():
        rows = {
            scope: LoginThrottle.objects.select_for_update().get_or_create(
                **fields, defaults={"window_started_at": moment}
            )[0]
            for scope, fields in _rows_of(username, address).items()
        }
        # The account first, so that the failure which puts it under attack already meets the pair's
        # smaller allowance.
        for scope in (Scope.ACCOUNT, Scope.ADDRESS, Scope.PAIR):
            row = rows[scope]
            if _holds(row, moment):
                continue
            if row.window_started_at <= moment - cooloff:
                row.failures, row.window_started_at, row.locked_until = 0, moment, None
            row.failures += 1
            if row.failures >= _limit(scope, under_attack=_holds(rows[Scope.ACCOUNT], moment)):
                row.locked_until = moment + cooloff
                log.warning(
                    "Sign-in paused for one %s after %d failures, until %s", scope, row.failures, row.locked_until
                )
            row.save(update_fields=["failures", "window_started_at", "locked_until"])
    return _opens_at(rows, moment)


def _second_factor_row(username: str | None) -> dict[str, str]:
    # The account's own row for second factors: its address column holds a keyed marker that no
    # address hashes to, so ``_find`` and the other scopes never read it, while ``unlock`` and
    # ``clear_expired`` treat it as any other row of the account.
    return {"account": _account(username), "address": _hash("second factor", "")}


def second_factor_locked_until(*, username: str | None, now: Callable[[], datetime] | None = None) -> datetime | None:
    """When this account's authenticator-code and security-key steps open again, or None if open now."""
    moment = (now or timezone.now)()
    row = LoginThrottle.objects.filter(**_second_factor_row(username)).first()
    return row.locked_until if row is not None and _holds(row, moment) else None


def record_second_factor_failure(*, user, address: str, now: Callable[[], datetime] | None = None) -> datetime | None:
    """A wrong authenticator code or security key: a failed sign-in (``record_failure``, whose answer
    this is) and one more for the account's second factor from every address, which past
    LOGIN_SECOND_FACTOR_FAILURE_LIMIT pauses the code and key steps (``second_factor_locked_until``)."""
    moment = (now or timezone.now)()
    username = user.get_username()
    with transaction.atomic():
        row = LoginThrottle.objects.select_for_update().get_or_create(
            **_second_factor_row(username), defaults={"window_started_at": moment}
        )[0]
        if not _holds(row, moment):  # refused during a pause: not counted, so it cannot extend it
            if row.window_started_at <= moment - settings.LOGIN_COOLOFF:
                row.failures, row.window_started_at, row.locked_until = 0, moment, None
            row.failures += 1
            if row.failures >= settings.LOGIN_SECOND_FACTOR_FAILURE_LIMIT:
                row.locked_until = moment + settings.LOGIN_COOLOFF
                log.warning(
                    "Second factors of one account paused after %d failures, until %s", row.failures, row.locked_until
                )
                audit_person(
                    user=user,
                    action="accounts.two_factor.second_factor_paused",
                    actor=Actor.system("sign-in throttle"),
                    after={"failures": row.failures, "until": row.locked_until.isoformat()},
                )
            row.save(update_fields=["failures", "window_started_at", "locked_until"])
    return record_failure(username=username, address=address, now=now)


def retry_after_seconds(until: datetime) -> int:
    """Whole seconds until a pause ends, at least one: a 429's ``Retry-After``."""
    return max(1, math.ceil((until - timezone.now()).total_seconds()))


def record_success(*, username: str | None, address: str) -> None:
    """A right password clears this account's count from this address; the address's count stays,
    so signing in to one's own account cannot wipe the record of guessing at others."""
    LoginThrottle.objects.filter(**_rows_of(username, address)[Scope.PAIR]).delete()


def unlock(*, username: str) -> int:
    """An admin's way out for a person: every count and pause of that account, from every address."""
    return LoginThrottle.objects.filter(account=_account(username)).delete()[0]


def clear_expired(*, now: Callable[[], datetime] | None = None) -> int:
    """Rows whose window and pause are both over count for nothing; the daily retention pass drops them."""
    moment = (now or timezone.now)()
    stale = LoginThrottle.objects.filter(window_started_at__lte=moment - settings.LOGIN_COOLOFF).exclude(
        locked_until__gt=moment
    )
    return stale.delete()[0]
