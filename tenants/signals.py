"""Signals other parts of the accounts code listen to, so the sender need not know who listens."""

from django.dispatch import Signal

# Sent (with ``user`` and ``request``) when an account's credentials change: its password, or a second
# factor enrolled, removed or reset. Signed-in sessions other than the request's own are ended
# (docs/sign-in.md): whoever held the old credentials keeps nothing. ``request`` is None when no
# session of the user's made the change (an admin's reset, a management command).
credentials_changed = Signal()
