"""Settings from the environment (twelve-factor); defaults make `make run` work with nothing set."""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from core import allowlist, signing_keys

BASE_DIR = Path(__file__).resolve().parent.parent
# The dashboard's templates and static sources ship inside this package (pyproject.toml), so an
# installed wheel finds them where a checkout does.
PROJECT_DIR = Path(__file__).resolve().parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def _allow_list(name: str) -> list[str]:
    try:
        return allowlist.validated(name, os.environ.get(name, "").split(","))
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None


#: DEBUG: `1` only for the local demo (`make run`): development keys, detailed error pages. Never in production.
DEBUG = env_bool("DEBUG", False)
# A fixed development key keeps `make run` (which sets DEBUG) zero-configuration. Production must set its
# own SECRET_KEY and GOVERNANCE_SECRETS_KEY: refused below, since the secrets key would otherwise be
# derived from a key that is published in this repository.
DEVELOPMENT_SECRET_KEY = "groundrule-insecure-development-key-change-me"
#: SECRET_KEY [required with `DEBUG` off]: Django's signing key (sessions, CSRF tokens, signed cookies): a long random
#:   value, e.g. `python -c 'import secrets; print(secrets.token_urlsafe(50))'`. Changing it signs everyone out.
SECRET_KEY = os.environ.get("SECRET_KEY") or DEVELOPMENT_SECRET_KEY
#: ALLOWED_HOSTS: comma-separated host names the server answers to; the container's health probe uses the first one.
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()
]
#: CSRF_TRUSTED_ORIGINS: comma-separated origins trusted for form posts, e.g. `https://groundrule.example.com` behind
#:   a TLS proxy.
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# Encrypts tenant secrets at rest. Falls back to a key derived from SECRET_KEY so a demo works,
# but a deployment should set its own and keep it out of the database backups.
#: GOVERNANCE_SECRETS_KEY [required with `DEBUG` off]: encrypts tenant secrets (provider API keys, webhook signing
#:   secrets) in the database. Keep it apart from the database backups and escrow it: without it those secrets cannot
#:   be read.
GOVERNANCE_SECRETS_KEY = os.environ.get("GOVERNANCE_SECRETS_KEY", "")

if not DEBUG:
    _missing = [name for name in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY") if not os.environ.get(name, "").strip()]
    if _missing or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
        raise ImproperlyConfigured(
            f"DEBUG is off, so set {' and '.join(_missing) or 'SECRET_KEY'} in the environment to your own "
            "random values (the development defaults are public). For a local demo set DEBUG=1."
        )

# Audit checkpoints are signed (Ed25519, core/signing_keys.py, docs/security.md) with the first key of
# AUDIT_SIGNING_KEYS ("<id>:<base64 private key>,..."); the others and AUDIT_VERIFY_KEYS (public keys of
# retired signers) still verify. Never stored in the database: a key there would let whoever rewrites
# the audit rows re-sign their heads too. DEBUG gets the public development key below; production
# refuses it, and without any key the checkpoint endpoint answers 503.
DEVELOPMENT_AUDIT_SIGNING_KEY = "dev:ZtBEtyolUwrlF8l3BwbbwL6uh0b5Z4RFFZd0VCdSvag="
#: AUDIT_SIGNING_KEYS [the public development key with `DEBUG` on]: comma-separated `<key id>:<base64 Ed25519 private
#:   key>`; the first signs the audit checkpoints, the others still verify. Generate one with
#:   `manage.py audit_signing_key generate`. Keep it in a secret store, never in the database or its backups.
AUDIT_SIGNING_KEYS = os.environ.get("AUDIT_SIGNING_KEYS", "").strip()
if DEBUG and not AUDIT_SIGNING_KEYS:
    AUDIT_SIGNING_KEYS = DEVELOPMENT_AUDIT_SIGNING_KEY
#: AUDIT_VERIFY_KEYS: comma-separated `<key id>:<base64 Ed25519 public key>` of retired signers, so that their
#:   checkpoints still verify after a rotation.
AUDIT_VERIFY_KEYS = os.environ.get("AUDIT_VERIFY_KEYS", "").strip()
try:
    AUDIT_KEYS = signing_keys.parse_keys(AUDIT_SIGNING_KEYS, AUDIT_VERIFY_KEYS)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
if not DEBUG and DEVELOPMENT_AUDIT_SIGNING_KEY.split(":", 1)[1] in AUDIT_SIGNING_KEYS:
    raise ImproperlyConfigured(
        "DEBUG is off, so AUDIT_SIGNING_KEYS must not hold the development key (it is public): generate your own "
        "with `manage.py audit_signing_key generate`."
    )
# Signed checkpoints of every tenant's audit head are published outside the database every
# AUDIT_CHECKPOINT_INTERVAL_SECONDS (when the head moved): appended to AUDIT_CHECKPOINT_DIR/<tenant>.jsonl
# when set, and sent to webhooks subscribed to audit.checkpoint.
#: AUDIT_CHECKPOINT_DIR: a folder (write-once storage, or one shipped off the machine) where each tenant's signed
#:   audit checkpoints are appended to `<tenant slug>.jsonl`; empty: published to webhooks only.
AUDIT_CHECKPOINT_DIR = os.environ.get("AUDIT_CHECKPOINT_DIR", "").strip()
#: AUDIT_CHECKPOINT_INTERVAL_SECONDS: how often beat signs and publishes each tenant's audit head (when it moved).
AUDIT_CHECKPOINT_INTERVAL_SECONDS = float(os.environ.get("AUDIT_CHECKPOINT_INTERVAL_SECONDS", "3600"))

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "outbox",
    "tenants",
    "policies",
    "governance",
    "judges",
    "webhooks",
    "otlp",
]

MIDDLEWARE = [
    "core.middleware.RequestIdMiddleware",
    "core.middleware.ApiErrorsAsJsonMiddleware",
    "core.middleware.BodySizeLimitMiddleware",
    "core.routing.ReplicaRoutingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Keeps each signed-in session's "last seen" on the account security page (docs/sign-in.md).
    "tenants.session_middleware.SessionActivityMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "tenants.middleware.TenantScopeMiddleware",
    # Turns a sign-in refused by the throttle (tenants/login_throttle.py) into its 429 answer.
    "tenants.middleware.SignInLockMiddleware",
    # A member of a workspace that requires two-factor authentication, without it, sees only enrolment.
    "tenants.two_factor_middleware.TwoFactorRequiredMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [PROJECT_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tenants.context_processors.current_tenant",
            ],
        },
    }
]

#: DATABASE_URL [SQLite in `var/`]: the primary database, `postgres://user:password@host:5432/name`; SQLite is for the
#:   demo and the tests.
#: CONN_MAX_AGE: seconds a database connection is reused; `0` behind PgBouncer in transaction mode.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'var' / 'groundrule.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default under concurrent reporters (README, "Reliability"): WAL lets readers go on
    # while one writer writes; IMMEDIATE takes the write lock when a transaction begins, so two
    # transactions never both read and then fail to upgrade to writing ("database is locked" with
    # no wait); the busy timeout (seconds) is how long a writer queues for the lock. A 64 MB page
    # cache (SQLite's default is 2 MB) keeps a long run's indexes in memory, so a late report costs
    # what an early one does (bench/run_growth.py).
    #: SQLITE_BUSY_TIMEOUT: seconds a writer waits for SQLite's write lock (the demo's database).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": int(os.environ.get("SQLITE_BUSY_TIMEOUT", "30")),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The hot paths' statements (core/prepared.py) are prepared once per PostgreSQL connection. A pooler
# in transaction mode hands a connection's prepared statements to nobody else: turn this off behind
# PgBouncer older than 1.21 or without max_prepared_statements (docs/deploy.md).
#: DATABASE_PREPARED_STATEMENTS: prepare the hot paths' statements once per PostgreSQL connection; `0` behind a pooler
#:   that cannot keep them (PgBouncer before 1.21, or without `max_prepared_statements`).
DATABASE_PREPARED_STATEMENTS = env_bool("DATABASE_PREPARED_STATEMENTS", True)

# Read replica (docs/deploy.md). Heavy reads (dashboard lists and details, exports) go to it;
# writes, reads in a writing request, and a user's reads for REPLICA_STICKY_SECONDS after their
# own write stay on the primary (core/routing.py). Without the variable there is one database.
#: DATABASE_REPLICA_URL: a streaming read replica for the heavy reads (dashboard lists and details, exports); empty:
#:   one database.
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = dj_database_url.parse(
        DATABASE_REPLICA_URL, conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")), conn_health_checks=True
    )
    # The test runner makes "replica" a second connection to the primary's test database.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
DATABASE_ROUTERS = ["core.routing.ReplicaRouter"]
#: REPLICA_READS: `0` keeps the replica configured (and checked by `/readyz`) but reads nothing from it.
REPLICA_READS = env_bool("REPLICA_READS", True)
#: REPLICA_STICKY_SECONDS: how long a user's reads stay on the primary after their own write.
REPLICA_STICKY_SECONDS = int(os.environ.get("REPLICA_STICKY_SECONDS", "5"))
# /readyz fails when the replica is further behind than this (empty: no limit).
#: REPLICA_MAX_LAG_SECONDS: `/readyz` fails when the replica is further behind than this many seconds; empty: no
#:   limit.
_max_lag = os.environ.get("REPLICA_MAX_LAG_SECONDS", "30").strip()
REPLICA_MAX_LAG_SECONDS = float(_max_lag) if _max_lag else None

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
# Set STATIC_ROOT (and run collectstatic) in production; development serves from the finders.
#: STATIC_ROOT [empty; `/app/staticfiles` in the image]: where `collectstatic` puts the static files, which whitenoise
#:   serves.
STATIC_ROOT = os.environ.get("STATIC_ROOT") or None
STATICFILES_DIRS = [PROJECT_DIR / "static"]
# Serve from the finders in development and tests, so `collectstatic` is a production-only step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Bodies larger than this are refused with 413 before any parsing.
#: MAX_BODY_BYTES: request bodies larger than this are refused with 413 before any parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("MAX_BODY_BYTES", str(1024 * 1024)))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenants.auth.HasScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["tenants.throttling.ApiKeyRateThrottle"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Groundrule API",
    "DESCRIPTION": "Grounding governance for AI agents: policies, runs, decisions, audit.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # One name for allow/warn/block, whether a field is called action or final_action.
    "ENUM_NAME_OVERRIDES": {
        "ActionEnum": "governance.models.Action",
        "RunStatusEnum": "governance.models.Run.Status",
        "ReplayJobStatusEnum": "governance.models.ReplayJob.Status",
        "WebhookDeliveryStatusEnum": "webhooks.models.WebhookDelivery.Status",
        # A key's scope (legacy included) beside the scopes a new key may be given: without a name,
        # spectacular called the first "Scope985Enum", a name that changes from build to build.
        "KeyScopeEnum": "tenants.models.KeyScope",
        "PolicyChangeEnum": "policies.as_code.PLAN_ACTIONS",
    },
}

# Celery: with no broker configured, tasks run eagerly in-process (the embedded demo).
#: CELERY_BROKER_URL: Redis for Celery, e.g. `redis://redis:6379/0`; empty runs background work in-process (the demo
#:   only).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
#: CELERY_TASK_TIME_LIMIT: seconds a background task may run before its worker process is killed.
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "60"))
#: CELERY_TASK_SOFT_TIME_LIMIT: seconds after which a background task is asked to stop.
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("CELERY_TASK_SOFT_TIME_LIMIT", "45"))
CELERY_RESULT_BACKEND = None
# A send the broker refuses fails at once: the work is an outbox row already, and the relay sends
# it when the broker is back (kombu would otherwise retry for ~6 s inside the agent's request).
CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_connect_timeout": 1.0}
# Deployments (or test runs) sharing one Redis keep apart by a prefix on every broker key.
#: CELERY_BROKER_KEY_PREFIX: a prefix on every broker key, for deployments (or test runs) sharing one Redis.
if os.environ.get("CELERY_BROKER_KEY_PREFIX"):
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = os.environ["CELERY_BROKER_KEY_PREFIX"]
# The outbox (outbox/services.py): queued work is a row written with the change that caused it.
# A row not done OUTBOX_RELAY_AFTER_SECONDS after it was queued (or after its lease ran out) is
# sent again by the relay, which beat runs every OUTBOX_RELAY_INTERVAL_SECONDS; one the broker
# refused is due at once. After OUTBOX_MAX_SENDS, or once its task has died with OUTBOX_MAX_CRASHES
# workers, the relay stops and /readyz counts it as stuck. Work the broker lost comes back within
# RELAY_AFTER + INTERVAL (75 s); a pass that finds nothing due is one indexed query (bench/outbox_relay.py).
# A copy sent while the first still waits in a long queue finds the row claimed or done and does nothing.
#: OUTBOX_RELAY_AFTER_SECONDS: queued work not done this long after it was sent is sent again by the relay.
OUTBOX_RELAY_AFTER_SECONDS = float(os.environ.get("OUTBOX_RELAY_AFTER_SECONDS", "60"))
#: OUTBOX_RELAY_INTERVAL_SECONDS: how often beat runs the outbox relay.
OUTBOX_RELAY_INTERVAL_SECONDS = float(os.environ.get("OUTBOX_RELAY_INTERVAL_SECONDS", "15"))
#: OUTBOX_LEASE_GRACE_SECONDS: added to a task's time limit: how long a claimed row waits before the relay sends it
#:   again.
OUTBOX_LEASE_GRACE_SECONDS = float(os.environ.get("OUTBOX_LEASE_GRACE_SECONDS", "30"))
# 60 sends a minute apart: a row stuck behind an hour-long backlog is still not given up.
#: OUTBOX_MAX_SENDS: sends after which the relay gives a row up (counted as stuck by `/readyz`).
OUTBOX_MAX_SENDS = int(os.environ.get("OUTBOX_MAX_SENDS", "60"))
#: OUTBOX_MAX_CRASHES: workers a row's task may die with (killed mid-run) before the row is given up.
OUTBOX_MAX_CRASHES = int(os.environ.get("OUTBOX_MAX_CRASHES", "3"))
#: OUTBOX_KEEP_DONE_SECONDS: done outbox rows are deleted by the relay after this many seconds.
OUTBOX_KEEP_DONE_SECONDS = float(os.environ.get("OUTBOX_KEEP_DONE_SECONDS", "86400"))
# Periodic work, all of it here; exactly one beat process per deployment enqueues it (docs/deploy.md).
CELERY_BEAT_SCHEDULE = {
    "outbox-relay": {"task": "outbox.relay", "schedule": OUTBOX_RELAY_INTERVAL_SECONDS},
    # Months are made three ahead, so a few missed days (beat down, a lock timeout) cost nothing.
    "ensure-partitions-daily": {"task": "governance.ensure_partitions", "schedule": crontab(hour=2, minute=47)},
    # Retention (governance/retention.py) at a quiet hour, UTC.
    "apply-retention-daily": {"task": "governance.apply_retention", "schedule": crontab(hour=3, minute=17)},
    "publish-audit-checkpoints": {
        "task": "governance.publish_audit_checkpoints",
        "schedule": AUDIT_CHECKPOINT_INTERVAL_SECONDS,
    },
}

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Several web nodes share what they cache (who just wrote: core/routing.py; rate-limit counts:
# tenants/throttling.py) through Redis.
# Every use of it fails open (core/soft_cache.py); the timeouts keep a Redis that does not answer from
# holding a request longer than that.
#: CACHE_TIMEOUT_SECONDS: how long a cache call may wait for Redis before it fails open.
_cache_timeout = float(os.environ.get("CACHE_TIMEOUT_SECONDS", "0.5"))
#: CACHE_URL [empty (memory of each process)]: Redis for the cache the web nodes share (rate-limit counts, who just
#:   wrote, checks in flight), e.g. `redis://redis:6379/1`. Set it with more than one web process.
if os.environ.get("CACHE_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["CACHE_URL"],
            "OPTIONS": {
                "socket_connect_timeout": _cache_timeout,
                "socket_timeout": _cache_timeout,
            },
        }
    }

# Judges
#: JUDGE_SYNC_BUDGET_SECONDS: time an inline (blocking) LLM judge may take before it is skipped.
JUDGE_SYNC_BUDGET_SECONDS = float(os.environ.get("JUDGE_SYNC_BUDGET_SECONDS", "10"))
#: JUDGE_BACKGROUND_TIMEOUT_SECONDS: time a background LLM judge call may take.
JUDGE_BACKGROUND_TIMEOUT_SECONDS = float(os.environ.get("JUDGE_BACKGROUND_TIMEOUT_SECONDS", "30"))
# How long a web process reuses an agent's 7-day score inflation (the max_score_inflation rule's input)
# before reading it again: one aggregate query per report otherwise (docs/score-audit.md). 0 = always read.
#: SCORE_AUDIT_INFLATION_CACHE_SECONDS: how long a web process reuses an agent's 7-day score inflation before reading
#:   it again; `0`: always read.
SCORE_AUDIT_INFLATION_CACHE_SECONDS = float(os.environ.get("SCORE_AUDIT_INFLATION_CACHE_SECONDS", "30"))

# Policies as code (docs/policies-as-code.md): how far back `plan` replays a change (replay_days at
# most this), and how many stored reports it replays at most (the most recent runs holding them).
#: POLICY_PLAN_MAX_DAYS: the furthest back `policies plan` replays a change (its `replay_days` at most this).
POLICY_PLAN_MAX_DAYS = int(os.environ.get("POLICY_PLAN_MAX_DAYS", "30"))
#: POLICY_PLAN_MAX_REPORTS: the most stored reports one `policies plan` replays (those of the most recent runs).
POLICY_PLAN_MAX_REPORTS = int(os.environ.get("POLICY_PLAN_MAX_REPORTS", "10000"))
# Tenants may point a provider SDK at their own gateway (OPENAI_BASE_URL secret). The server never
# calls loopback, private, link-local, multicast or metadata addresses for them (core/outbound.py)
# unless the operator lists the host or network (CIDR) here. JUDGE_BASE_URL_ALLOWED_HOSTS is the old
# name of the same list and is still read.
# Entries: host, host:port, address, CIDR, CIDR:port, [IPv6]:port (core/allowlist.py); one without a port
# allows every port, so give loopback and private entries theirs (docs/security.md). An entry that
# does not parse stops the start, named.
#: OUTBOUND_ALLOWED_HOSTS [empty (public addresses only)]: comma-separated `host`, `host:port`, CIDR, `CIDR:port` or
#:   `[IPv6]:port` entries at loopback, private, link-local or metadata addresses that tenants' provider base URLs and
#:   webhooks may still reach; an entry without a port allows every port. An entry that does not parse stops the start.
#: JUDGE_BASE_URL_ALLOWED_HOSTS: the old name of `OUTBOUND_ALLOWED_HOSTS`, still read (the two lists are joined).
OUTBOUND_ALLOWED_HOSTS = _allow_list("OUTBOUND_ALLOWED_HOSTS") + _allow_list("JUDGE_BASE_URL_ALLOWED_HOSTS")
#: VERIFIER_THREADS: ONNX Runtime threads of the local verifier in each process.
VERIFIER_THREADS = int(os.environ.get("VERIFIER_THREADS", "1"))
# Bounded verifier work per request (judges/budget.py, README "Reliability"). Hard: refused with 413.
#: GROUNDING_CHECK_MAX_BODY_BYTES: a grounding check's body larger than this is refused with 413.
GROUNDING_CHECK_MAX_BODY_BYTES = int(os.environ.get("GROUNDING_CHECK_MAX_BODY_BYTES", str(400 * 1024)))
#: GROUNDING_MAX_SOURCE_CHARS: a grounding check whose sources hold more characters than this is refused with 413.
GROUNDING_MAX_SOURCE_CHARS = int(os.environ.get("GROUNDING_MAX_SOURCE_CHARS", "100000"))
# Shared by every process and node through CACHE_URL; per process with the in-process cache.
#: GROUNDING_CHECK_MAX_IN_FLIGHT: grounding checks one API key may have running at once; more are a 429 with
#:   `Retry-After`. `0`: no limit.
GROUNDING_CHECK_MAX_IN_FLIGHT = int(os.environ.get("GROUNDING_CHECK_MAX_IN_FLIGHT", "2"))
# Soft: the check runs on what fits; the claims left over are "unverifiable" with a warning.
#: VERIFIER_MAX_SOURCE_CHARS: characters of source text the verifier reads; the claims it cannot check on what fits
#:   are `unverifiable`, with a warning.
VERIFIER_MAX_SOURCE_CHARS = int(os.environ.get("VERIFIER_MAX_SOURCE_CHARS", "8000"))
#: VERIFIER_MAX_CLAIMS: claims the verifier checks per call; the rest are `unverifiable`, with a warning.
VERIFIER_MAX_CLAIMS = int(os.environ.get("VERIFIER_MAX_CLAIMS", "16"))
#: VERIFIER_MAX_PAIRS: claim and passage pairs the verifier scores per call; the claims left over are `unverifiable`,
#:   with a warning.
VERIFIER_MAX_PAIRS = int(os.environ.get("VERIFIER_MAX_PAIRS", "1500"))
#: VERIFIER_MAX_CLAIM_CHARS: a claim longer than this many characters is not verified (`unverifiable`).
VERIFIER_MAX_CLAIM_CHARS = int(os.environ.get("VERIFIER_MAX_CLAIM_CHARS", "3000"))
# Weighted pairings of the fact alignment per call (judges/verifier/facts/work.py): bounds its CPU
# (about 1-2 microseconds a unit), whatever the characters hold.
#: VERIFIER_MAX_WORK: the fact alignment's weighted pairings per verifier call, which bounds its CPU whatever the
#:   text holds; the claims that do not fit are `unverifiable`, with a reason.
VERIFIER_MAX_WORK = int(os.environ.get("VERIFIER_MAX_WORK", "300000"))
#: VERIFIER_NLI_MODEL_DIR [the packaged model]: a folder holding another NLI model (`model.onnx`, `tokenizer.json`,
#:   `config.json`) for the verifier.
VERIFIER_NLI_MODEL_DIR = os.environ.get("VERIFIER_NLI_MODEL_DIR") or None
#: VERIFIER_ESCALATION_MAX_CLAIMS: the most undecided claims one verifier check of a report sends to the tenant's LLM
#:   judge, whatever a policy's `nli_escalation_max_claims` asks (the verifier's model card, "The cascade").
VERIFIER_ESCALATION_MAX_CLAIMS = int(os.environ.get("VERIFIER_ESCALATION_MAX_CLAIMS", "20"))
#: VERIFIER_MODEL_STORE [`var/verifier-model`; `/var/lib/groundrule/verifier-model` in the image]: where
#:   `manage.py verifier_model install` keeps operator NLI models and which one runs, a folder every web and worker
#:   process reads (a shared volume). Empty: no installed models.
VERIFIER_MODEL_STORE = os.environ.get("VERIFIER_MODEL_STORE", str(BASE_DIR / "var" / "verifier-model")) or None

#: LOG_LEVEL: the root log level (`DEBUG`, `INFO`, `WARNING`, `ERROR`).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Browser-facing hardening (README, "Security"). Always on: they cost nothing over plain HTTP.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Production behind TLS sets HTTPS=true: cookies only over HTTPS, HSTS, and the proxy's
# X-Forwarded-Proto trusted (TLS ends at a proxy that sets it). Off by default so `make run` and the
# browser tests work over plain http://127.0.0.1.
#: HTTPS: `true` behind a TLS proxy (with `DEBUG` off): cookies only over HTTPS, HSTS, plain HTTP redirected, and the
#:   proxy's `X-Forwarded-Proto` header trusted. Set it only when your proxy sets that header on every request.
if not DEBUG and env_bool("HTTPS", False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    CSRF_COOKIE_HTTPONLY = True
    #: SECURE_HSTS_SECONDS: with `HTTPS`: seconds browsers remember to use HTTPS only.
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    #: SECURE_HSTS_INCLUDE_SUBDOMAINS: with `HTTPS`: HSTS covers the subdomains too.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    #: SECURE_HSTS_PRELOAD: with `HTTPS`: ask to be in the browsers' HSTS preload list.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    #: SECURE_SSL_REDIRECT: with `HTTPS`: redirect plain HTTP to HTTPS (`/healthz` and `/readyz` answer as they are);
    #:   `0` when the proxy redirects.
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Probes come over plain HTTP from the load balancer: a redirect would hide a 503 (and counts
    # as a success to a Kubernetes probe), so both answer as they are.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]

# --- Ecosystem: metrics, rate limits, login throttling, webhooks, OTLP (issue 13) ---------------
# /metrics answers a scraper that sends `Authorization: Bearer <METRICS_TOKEN>`; with no token set,
# only a loopback client. Tenant slugs become a label only when asked (one series per tenant).
#: METRICS_TOKEN: `/metrics` answers a scraper that sends `Authorization: Bearer <token>`; empty: only a loopback
#:   client.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
#: METRICS_TENANT_LABELS: `1`: tenant slugs become a metrics label (one series per tenant).
METRICS_TENANT_LABELS = env_bool("METRICS_TENANT_LABELS", False)
#: METRICS_CELERY_QUEUES: comma-separated Celery queues whose length `/metrics` reports.
METRICS_CELERY_QUEUES = [q.strip() for q in os.environ.get("METRICS_CELERY_QUEUES", "celery").split(",") if q.strip()]

# Per-API-key request limit (tenants/throttling.py): "<n>/<s|min|hour|day>", or "off".
#: API_RATE_LIMIT: requests each API key may make, as `<n>/s`, `<n>/min`, `<n>/hour` or `<n>/day`, or `off`;
#:   above it, 429.
API_RATE_LIMIT = os.environ.get("API_RATE_LIMIT", "1200/min")

# Dashboard sign-in throttling (tenants/login_throttle.py, docs/sign-in.md): failures are limited per
# account from one address, per address and per account, and a pause lasts LOGIN_COOLOFF_MINUTES from
# the failure that started it (attempts during it are not counted).
AUTHENTICATION_BACKENDS = ["tenants.login_backends.LoginThrottleBackend"]
#: LOGIN_FAILURE_LIMIT: failed dashboard sign-ins for one account from one address before that account is paused from
#:   that address (429).
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
#: LOGIN_ADDRESS_FAILURE_LIMIT: failed sign-ins from one address, whatever the accounts, before that address is paused.
LOGIN_ADDRESS_FAILURE_LIMIT = int(os.environ.get("LOGIN_ADDRESS_FAILURE_LIMIT", "30"))
#: LOGIN_ACCOUNT_FAILURE_LIMIT: failed sign-ins for one account from every address before it is under attack: each
#:   address then gets one failure on it until the cool-off ends (the account is never locked for everyone).
LOGIN_ACCOUNT_FAILURE_LIMIT = int(os.environ.get("LOGIN_ACCOUNT_FAILURE_LIMIT", "20"))
#: LOGIN_COOLOFF_MINUTES: minutes a sign-in pause lasts from the failure that started it; attempts during it do not
#:   extend it.
LOGIN_COOLOFF = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
#: LOGIN_SECOND_FACTOR_FAILURE_LIMIT: wrong authenticator codes and security-key answers for one account, from every
#:   address, before those two steps are paused for it until the cool-off ends (a recovery code still signs in).
LOGIN_SECOND_FACTOR_FAILURE_LIMIT = int(os.environ.get("LOGIN_SECOND_FACTOR_FAILURE_LIMIT", "10"))
# "Confirm it's you" (tenants/pages/reauthenticate.py, docs/two-factor.md): how long a confirmation
# or a fresh sign-in lets a session add or remove second factors without being asked again.
#: REAUTHENTICATE_MINUTES: minutes after a sign-in or a "confirm it's you" during which adding or removing a second
#:   factor, or printing new recovery codes, is not asked to confirm again.
REAUTHENTICATE = timedelta(minutes=int(os.environ.get("REAUTHENTICATE_MINUTES", "10")))
#: TRUSTED_PROXY_COUNT: reverse proxies in front of the server (`1` behind one Caddy or nginx): the client's address
#:   is read from that many entries from the right of `X-Forwarded-For`. `0`: the header is ignored.
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))

# Webhooks (webhooks/): https:// URLs only, except hosts listed here, which may also be http:// and
# resolve to private or loopback addresses (an operator's own receivers). core/outbound.py reads both.
#: WEBHOOK_ALLOWED_HOSTS: comma-separated entries, as for `OUTBOUND_ALLOWED_HOSTS`, that webhooks may reach over
#:   plain `http://` and at private or loopback addresses (your own receivers); any other needs `https://` and a
#:   public address.
WEBHOOK_ALLOWED_HOSTS = _allow_list("WEBHOOK_ALLOWED_HOSTS")

# OTLP trace ingest (POST /v1/traces): the limit on a body once gunzipped; the wire size is
# MAX_BODY_BYTES like every request.
#: OTLP_MAX_BODY_BYTES: the limit on an OTLP trace body once gunzipped (`POST /v1/traces`); the size on the wire is
#:   `MAX_BODY_BYTES`.
OTLP_MAX_BODY_BYTES = int(os.environ.get("OTLP_MAX_BODY_BYTES", str(8 * 1024 * 1024)))

# --- Members: the first workspace, invitations, email (docs/members-and-invitations.md) ---------
#: PUBLIC_URL: the address people open, e.g. `https://groundrule.example.com`: links in emails and from commands
#:   (`manage.py invite`) are built on it. Empty: pages use the request's own host; commands need `--url`.
PUBLIC_URL = os.environ.get("PUBLIC_URL", "").strip().rstrip("/")
#: INVITATION_TTL_HOURS: how long an invitation link stays valid.
INVITATION_TTL_HOURS = int(os.environ.get("INVITATION_TTL_HOURS", "72"))

# --- Single sign-on with OpenID Connect (tenants/oidc.py, docs/sso.md) --------------------------
# The identity provider is the operator's: set the issuer and the client registered there, whose
# redirect URI is https://HOST/accounts/oidc/callback/. Unset OIDC_ISSUER: no SSO button.
#: OIDC_ISSUER: the identity provider's issuer URL, exactly as its discovery document states it (empty: SSO off)
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").strip()
#: OIDC_CLIENT_ID: the client ID registered for Groundrule at the identity provider
OIDC_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "").strip()
#: OIDC_CLIENT_SECRET: that client's secret (empty: a public client, PKCE only)
OIDC_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
#: OIDC_NAME: the provider's name on the sign-in button, "Sign in with …"
OIDC_NAME = os.environ.get("OIDC_NAME", "single sign-on").strip() or "single sign-on"
#: OIDC_SCOPES: the scopes asked for; must include openid and email
OIDC_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile").split()
#: OIDC_ALLOWED_DOMAINS: comma-separated email domains that get an account (no workspace) without an invitation
OIDC_ALLOWED_DOMAINS = [
    d.strip().lower().lstrip("@") for d in os.environ.get("OIDC_ALLOWED_DOMAINS", "").split(",") if d.strip()
]
#: OIDC_ONLY: true turns password sign-in off; the sign-in page shows only the SSO button
OIDC_ONLY = env_bool("OIDC_ONLY", False)
#: OIDC_TRUSTS_MFA: true when the identity provider enforces a second factor itself: SSO sign-ins skip Groundrule's
#:   second step and satisfy a workspace's require-2FA rule (docs/two-factor.md)
OIDC_TRUSTS_MFA = env_bool("OIDC_TRUSTS_MFA", False)
#: OIDC_GROUPS_CLAIM: the ID token (or userinfo) claim listing a person's groups (empty: groups give no roles)
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "").strip()
#: OIDC_GROUP_ROLES: comma-separated GROUP=WORKSPACE-SLUG:ROLE grants, e.g. "gr-acme-admins=acme:admin"
OIDC_GROUP_ROLES = [g.strip() for g in os.environ.get("OIDC_GROUP_ROLES", "").split(",") if g.strip()]
if OIDC_ISSUER and not OIDC_CLIENT_ID:
    raise ImproperlyConfigured("OIDC_ISSUER is set but OIDC_CLIENT_ID is not: set both, or neither.")
if OIDC_ONLY and not OIDC_ISSUER:
    raise ImproperlyConfigured("OIDC_ONLY=true turns password sign-in off, but no OIDC_ISSUER is set to sign in with.")
if OIDC_ISSUER and not {"openid", "email"} <= set(OIDC_SCOPES):
    raise ImproperlyConfigured("OIDC_SCOPES must include openid and email (the account is matched by email).")
# --- Security keys and passkeys (tenants/webauthn.py, docs/security-keys.md) -------------------
# A key is bound to the relying party ID it was registered for: changing it later makes every key
# registered so far unusable. Unset, the host name the dashboard is reached at is used.
#: WEBAUTHN_RP_ID [the request's host name]: the domain security keys are registered for,
#:   e.g. `groundrule.example.com`; changing it makes the keys registered so far unusable
WEBAUTHN_RP_ID = os.environ.get("WEBAUTHN_RP_ID", "").strip().lower()
#: WEBAUTHN_ORIGINS [the request's scheme and host]: comma-separated origins a key's answer may come from,
#:   e.g. `https://groundrule.example.com`
WEBAUTHN_ORIGINS = [o.strip().rstrip("/") for o in os.environ.get("WEBAUTHN_ORIGINS", "").split(",") if o.strip()]
# Mail goes through SMTP when EMAIL_HOST is set, else to the console (the process's standard output,
# which is where `make run` shows invitation emails). EMAIL_BACKEND names any other Django backend.
# Django 6.1 reads mail settings from MAILERS; these variables fill its default mailer.
#: EMAIL_HOST: the SMTP server for invitation emails; empty: emails are printed to the console (standard output).
_email_host = os.environ.get("EMAIL_HOST", "")
#: EMAIL_BACKEND [SMTP with `EMAIL_HOST`, else the console]: any Django email backend, by its dotted path.
_email_backend = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend" if _email_host else "django.core.mail.backends.console.EmailBackend"
)
# STARTTLS on 587 by default; EMAIL_USE_SSL=1 is implicit TLS (port 465). Django allows only one of them.
#: EMAIL_USE_SSL: `1`: implicit TLS (port 465) instead of STARTTLS.
_email_ssl = env_bool("EMAIL_USE_SSL", False)
#: EMAIL_PORT [`587`, `465` with `EMAIL_USE_SSL`]: the SMTP port.
_email_port = int(os.environ.get("EMAIL_PORT", "465" if _email_ssl else "587"))
#: EMAIL_HOST_USER: the SMTP login's user name.
_email_user = os.environ.get("EMAIL_HOST_USER", "")
#: EMAIL_HOST_PASSWORD: the SMTP login's password.
_email_password = os.environ.get("EMAIL_HOST_PASSWORD", "")
#: EMAIL_USE_TLS [on unless `EMAIL_USE_SSL`]: STARTTLS on the SMTP connection.
_email_tls = env_bool("EMAIL_USE_TLS", not _email_ssl)
#: EMAIL_TIMEOUT: seconds before the SMTP server counts as unreachable.
_email_timeout = int(os.environ.get("EMAIL_TIMEOUT", "10"))
_email_options = {}
if _email_backend == "django.core.mail.backends.smtp.EmailBackend":
    _email_options = {
        "host": _email_host or "localhost",
        "port": _email_port,
        "username": _email_user,
        "password": _email_password,
        "use_ssl": _email_ssl,
        "use_tls": _email_tls,
        "timeout": _email_timeout,
    }
MAILERS = {"default": {"BACKEND": _email_backend, "OPTIONS": _email_options}}
#: DEFAULT_FROM_EMAIL: the sender of invitation emails.
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Groundrule <groundrule@localhost>")
