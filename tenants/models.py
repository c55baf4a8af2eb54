import hashlib
import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from . import crypto

# A century: past it the cutoff (now − days) would leave the range of a datetime.
MAX_RETENTION_DAYS = 36_500
RETENTION_DAYS_VALIDATORS = [MinValueValidator(1), MaxValueValidator(MAX_RETENTION_DAYS)]


class Tenant(models.Model):
    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    # Bumped in the same transaction as any policy change; per-process policy caches compare it
    # with the value loaded alongside the API key, so they never serve stale policies.
    policy_generation = models.PositiveBigIntegerField(default=0)
    # The head of the tenant's audit hash chain (tenants/chain.py): the last row's seq and hash.
    # Appending locks this row, so concurrent writers queue instead of forking the chain, and
    # verification can tell rows cut from the end of the log from a log that never had them.
    audit_seq = models.PositiveBigIntegerField(default=0)
    audit_hash = models.CharField(max_length=64, blank=True, default="")
    # Share of grounding reports the local verifier re-scores off the request path (docs/score-audit.md);
    # a grounding policy's `score_audit_rate` rule overrides it for the reports it governs.
    score_audit_rate = models.FloatField(default=0.1, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    # Who measures the sampled reports: the local verifier (private, free) or the tenant's LLM judge
    # with `score_audit_model` (stronger, paid, the output leaves for the provider); a grounding
    # policy's `score_audit_auditor` rule overrides it. Each auditor's figures are kept apart.
    score_audit_auditor = models.CharField(
        max_length=8, choices=[("local", "Local verifier"), ("llm", "LLM judge")], default="local"
    )
    score_audit_model = models.CharField(max_length=200, default="gpt-4o-mini")
    # How many days of run data (runs and everything under them) and of audit log to keep; null keeps
    # everything. Applied by the retention pass (governance/retention.py), not at read time.
    retention_days = models.PositiveIntegerField(null=True, blank=True, validators=RETENTION_DAYS_VALIDATORS)
    audit_retention_days = models.PositiveIntegerField(null=True, blank=True, validators=RETENTION_DAYS_VALIDATORS)
    # Members without a second factor are sent to enrolment after sign-in and see nothing else
    # (docs/two-factor.md).
    require_two_factor = models.BooleanField(default=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="uniq_membership")]
        ordering = ["user__username"]

    @property
    def can_admin(self) -> bool:
        return self.role == Role.ADMIN

    @property
    def can_review(self) -> bool:
        return self.role in (Role.ADMIN, Role.REVIEWER)


API_KEY_PREFIX = "gr_"


class KeyScope(models.TextChoices):
    """What an API key may do (docs/security.md). Checked in one place: tenants.auth.HasScope."""

    AGENT = "agent", "Agent"  # start runs, report, spans, complete, check, decide; read its own runs
    READ = "read", "Read"  # every read endpoint and export
    ADMIN = "admin", "Admin"  # everything an admin can do: policies, secrets, keys
    # Keys made before scopes existed keep full rights until replaced; the keys page says so.
    LEGACY = "legacy", "Legacy (full rights)"


GRANTABLE_SCOPES = (KeyScope.AGENT, KeyScope.READ, KeyScope.ADMIN)


def hash_token(raw: str) -> str:
    # API keys and invitation tokens carry 256 bits of randomness, so a fast hash is enough: there is
    # nothing to brute-force.
    return hashlib.sha256(raw.encode()).hexdigest()


hash_api_key = hash_token


class ApiKey(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The first characters of the key, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=16, choices=KeyScope.choices, default=KeyScope.AGENT)
    # Agent keys only: the agent names (exact or shell patterns) the key may start runs for; empty = any.
    agents = models.JSONField(default=list, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def generate() -> str:
        return API_KEY_PREFIX + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_legacy(self) -> bool:
        return self.scope == KeyScope.LEGACY

    @property
    def full_rights(self) -> bool:
        return self.scope in (KeyScope.ADMIN, KeyScope.LEGACY)

    @property
    def masked(self) -> str:
        return f"{self.prefix}…"


class TenantSecret(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(max_length=64)
    ciphertext = models.TextField()
    hint = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="uniq_secret_name")]
        ordering = ["name"]

    def reveal(self) -> str:
        """The plaintext, for server-side use only (provider calls). Never render or log it."""
        return crypto.decrypt(self.ciphertext)


class Invitation(models.Model):
    """An emailed link that makes its holder a member of the tenant with ``role`` (tenants/invitations.py).

    Only a hash of the token is stored: the link is shown to the admin once and sent by email, and a
    database backup cannot be used to join. Single-use: accepted, revoked and expired are final.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "email"])]

    def __str__(self) -> str:
        return f"Invitation for {self.email} ({self.role})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def is_pending(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None and not self.is_expired


class AuditEventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise PermissionError("The audit log is append-only.")

    def delete(self):
        raise PermissionError("The audit log is append-only.")


class AuditEvent(models.Model):
    """Append-only record of every change: who, what, when, before and after (secrets masked)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=100, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    request_id = models.CharField(max_length=64, blank=True, default="")
    object_type = models.CharField(max_length=64, blank=True, default="")
    object_id = models.CharField(max_length=64, blank=True, default="")
    object_repr = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # The hash chain (tenants/chain.py): position in the tenant's log, the previous row's hash, this row's.
    seq = models.PositiveBigIntegerField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    objects = ScopedManager(tenant="tenant", _manager_class=models.Manager.from_queryset(AuditEventQuerySet))

    class Meta:
        # The table kept its name when the model moved here from governance (migration 0002).
        db_table = "governance_auditevent"
        ordering = ["-id"]
        indexes = [models.Index(fields=["tenant", "-id"])]
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="uniq_audit_seq")]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("The audit log is append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("The audit log is append-only.")


class AuditCheckpoint(models.Model):
    """Where a tenant's audit chain begins after retention removed its oldest rows.

    `seq` and `hash` are those of the last row removed: the first row kept has `seq + 1` and
    `prev_hash == hash`, so verification starts here instead of at the genesis hash. `removed`
    is how many rows this checkpoint let go (seq minus the previous checkpoint's seq); `seq` itself
    is how many the log has lost in all. On PostgreSQL an audit row can only be deleted when a
    checkpoint covers it (tenants/migrations/0008_retention.py).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    seq = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64)
    removed = models.PositiveBigIntegerField()
    # The retention cutoff it was made for: rows created before it went.
    before = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(tenant="tenant")

    class Meta:
        ordering = ["-seq"]
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="uniq_audit_checkpoint_seq")]

    def __str__(self) -> str:
        return f"Audit checkpoint at {self.seq}"


class LoginThrottle(models.Model):
    """Failed sign-ins counted for one account from one address, for one address, or for one account.

    tenants/login_throttle.py keeps these. `account` and `address` are keyed hashes (blank where the
    row counts the other alone), so the table holds no typed usernames (people type passwords into
    the wrong field) and no addresses, and an admin can still clear every row of one account.
    """

    account = models.CharField(max_length=64, blank=True)
    address = models.CharField(max_length=64, blank=True)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField(default=timezone.now)
    # Set once when the limit is reached and never moved by attempts made while it holds.
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "address"], name="uniq_login_throttle")]


class TotpDevice(models.Model):
    """A person's authenticator app (docs/two-factor.md): one per account, in use once confirmed.

    The shared secret is stored encrypted (tenants/crypto.py); ``last_used_step`` is the 30-second
    step of the last code accepted, so a code is never accepted twice.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="totp_device")
    secret_ciphertext = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    last_used_step = models.BigIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Authenticator app of {self.user}"


class RecoveryCode(models.Model):
    """One single-use recovery code, stored as a hash; a new set replaces the old one."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="recovery_codes")
    code_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "code_hash"], name="uniq_recovery_code")]

    def __str__(self) -> str:
        return f"Recovery code of {self.user}"


class WebAuthnCredential(models.Model):
    """A security key or passkey registered as a second factor (docs/two-factor.md)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webauthn_credentials")
    name = models.CharField(max_length=100)
    # base64url of the authenticator's credential ID, as browsers send it back.
    credential_id = models.CharField(max_length=1400, unique=True)
    public_key = models.BinaryField()
    sign_count = models.PositiveBigIntegerField(default=0)
    transports = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.name


class SignInMethod(models.TextChoices):
    """How a listed session signed in: by the page that signed it in, or the second factor that finished it."""

    PASSWORD = "password", "Password"
    SSO = "sso", "Single sign-on"
    INVITATION = "invitation", "Invitation link"
    TOTP = "totp", "Password and authenticator app"
    RECOVERY_CODE = "recovery_code", "Password and recovery code"
    WEBAUTHN = "webauthn", "Password and security key"
    SSO_TOTP = "sso_totp", "Single sign-on and authenticator app"
    SSO_RECOVERY_CODE = "sso_recovery_code", "Single sign-on and recovery code"
    SSO_WEBAUTHN = "sso_webauthn", "Single sign-on and security key"


class UserSession(models.Model):
    """One browser signed in as a person, as listed on their security page (docs/sign-in.md).

    tenants/user_sessions.py keeps these beside Django's own session rows. The session key is a
    credential, so it is stored encrypted (tenants/crypto.py) and read only to end that session; the
    page names a session by this row's id. The browser finds its own row by the id kept in its session.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signed_in_sessions")
    session_key_ciphertext = models.TextField()
    user_agent = models.CharField(max_length=300, blank=True)
    browser = models.CharField(max_length=100, blank=True)
    address = models.CharField(max_length=45, blank=True)
    sign_in_method = models.CharField(max_length=20, blank=True, choices=SignInMethod.choices)
    created_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-last_seen_at", "-pk"]
        indexes = [models.Index(fields=["user", "-last_seen_at"], name="user_session_user_seen")]

    def __str__(self) -> str:
        return f"{self.browser or 'Session'} of {self.user}"
