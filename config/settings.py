"""Settings from the environment (twelve-factor); defaults make `make run` work with nothing set."""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DEBUG", False)
# A fixed development key keeps `make run` (which sets DEBUG) zero-configuration. Production must set its
# own SECRET_KEY and GOVERNANCE_SECRETS_KEY: refused below, since the secrets key would otherwise be
# derived from a key that is published in this repository.
DEVELOPMENT_SECRET_KEY = "groundrule-insecure-development-key-change-me"
SECRET_KEY = os.environ.get("SECRET_KEY") or DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# Encrypts tenant secrets at rest. Falls back to a key derived from SECRET_KEY so a demo works,
# but a deployment should set its own and keep it out of the database backups.
GOVERNANCE_SECRETS_KEY = os.environ.get("GOVERNANCE_SECRETS_KEY", "")

if not DEBUG:
    _missing = [name for name in ("SECRET_KEY", "GOVERNANCE_SECRETS_KEY") if not os.environ.get(name, "").strip()]
    if _missing or SECRET_KEY == DEVELOPMENT_SECRET_KEY:
        raise ImproperlyConfigured(
            f"DEBUG is off, so set {' and '.join(_missing) or 'SECRET_KEY'} in the environment to your own "
            "random values (the development defaults are public). For a local demo set DEBUG=1."
        )

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
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "tenants.middleware.TenantScopeMiddleware",
    # Turns a sign-in refused by the throttle (tenants/login_throttle.py) into its 429 answer.
    "tenants.middleware.SignInLockMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'var' / 'groundrule.sqlite3'}",
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
DATABASE_PREPARED_STATEMENTS = env_bool("DATABASE_PREPARED_STATEMENTS", True)
# What each process keeps of long answers' rows (a run's reports and evaluations), keyed by their
# version on PostgreSQL (core/api/row_cache.py); 0 turns it off. Counted as the rows' JSON size, a
# kept list as much again: the dicts take about three times that in memory (32 MiB: at most ~100 MB
# a process; ~50,000 evaluations, or half that in lists read again and again).
ROW_CACHE_BYTES = int(os.environ.get("ROW_CACHE_BYTES", str(32 * 1024 * 1024)))

# Read replica (docs/deploy.md). Heavy reads (dashboard lists and details, exports) go to it;
# writes, reads in a writing request, and a user's reads for REPLICA_STICKY_SECONDS after their
# own write stay on the primary (core/routing.py). Without the variable there is one database.
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = dj_database_url.parse(
        DATABASE_REPLICA_URL, conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")), conn_health_checks=True
    )
    # The test runner makes "replica" a second connection to the primary's test database.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
DATABASE_ROUTERS = ["core.routing.ReplicaRouter"]
REPLICA_READS = env_bool("REPLICA_READS", True)
REPLICA_STICKY_SECONDS = int(os.environ.get("REPLICA_STICKY_SECONDS", "5"))
# /readyz fails when the replica is further behind than this (empty: no limit).
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
STATIC_ROOT = os.environ.get("STATIC_ROOT") or None
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve from the finders in development and tests, so `collectstatic` is a production-only step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Bodies larger than this are refused with 413 before any parsing.
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
    },
}

# Celery: with no broker configured, tasks run eagerly in-process (the embedded demo).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "60"))
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("CELERY_TASK_SOFT_TIME_LIMIT", "45"))
CELERY_RESULT_BACKEND = None
# A send the broker refuses fails at once: the work is an outbox row already, and the relay sends
# it when the broker is back (kombu would otherwise retry for ~6 s inside the agent's request).
CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_connect_timeout": 1.0}
# Deployments (or test runs) sharing one Redis keep apart by a prefix on every broker key.
if os.environ.get("CELERY_BROKER_KEY_PREFIX"):
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = os.environ["CELERY_BROKER_KEY_PREFIX"]
# The outbox (outbox/services.py): queued work is a row written with the change that caused it.
# A row not done OUTBOX_RELAY_AFTER_SECONDS after it was queued (or after its lease ran out) is
# sent again by the relay, which beat runs every OUTBOX_RELAY_INTERVAL_SECONDS; one the broker
# refused is due at once. After OUTBOX_MAX_SENDS, or once its task has died with OUTBOX_MAX_CRASHES
# workers, the relay stops and /readyz counts it as stuck.
OUTBOX_RELAY_AFTER_SECONDS = float(os.environ.get("OUTBOX_RELAY_AFTER_SECONDS", "300"))
OUTBOX_RELAY_INTERVAL_SECONDS = float(os.environ.get("OUTBOX_RELAY_INTERVAL_SECONDS", "30"))
OUTBOX_LEASE_GRACE_SECONDS = float(os.environ.get("OUTBOX_LEASE_GRACE_SECONDS", "30"))
OUTBOX_MAX_SENDS = int(os.environ.get("OUTBOX_MAX_SENDS", "20"))
OUTBOX_MAX_CRASHES = int(os.environ.get("OUTBOX_MAX_CRASHES", "3"))
OUTBOX_KEEP_DONE_SECONDS = float(os.environ.get("OUTBOX_KEEP_DONE_SECONDS", "86400"))
# Periodic work, all of it here; exactly one beat process per deployment enqueues it (docs/deploy.md).
CELERY_BEAT_SCHEDULE = {
    "outbox-relay": {"task": "outbox.relay", "schedule": OUTBOX_RELAY_INTERVAL_SECONDS},
    # Months are made three ahead, so a few missed days (beat down, a lock timeout) cost nothing.
    "ensure-partitions-daily": {"task": "governance.ensure_partitions", "schedule": crontab(hour=2, minute=47)},
    # Retention (governance/retention.py) at a quiet hour, UTC.
    "apply-retention-daily": {"task": "governance.apply_retention", "schedule": crontab(hour=3, minute=17)},
}

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Several web nodes share what they cache (who just wrote: core/routing.py; rate-limit counts:
# tenants/throttling.py) through Redis.
if os.environ.get("CACHE_URL"):
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["CACHE_URL"]}
    }

# Judges
JUDGE_SYNC_BUDGET_SECONDS = float(os.environ.get("JUDGE_SYNC_BUDGET_SECONDS", "10"))
JUDGE_BACKGROUND_TIMEOUT_SECONDS = float(os.environ.get("JUDGE_BACKGROUND_TIMEOUT_SECONDS", "30"))
# How long a web process reuses an agent's 7-day score inflation (the max_score_inflation rule's input)
# before reading it again: one aggregate query per report otherwise (docs/score-audit.md). 0 = always read.
SCORE_AUDIT_INFLATION_CACHE_SECONDS = float(os.environ.get("SCORE_AUDIT_INFLATION_CACHE_SECONDS", "30"))
# Tenants may point a provider SDK at their own gateway (OPENAI_BASE_URL secret). The server never
# calls loopback, private, link-local, multicast or metadata addresses for them (core/outbound.py)
# unless the operator lists the host or network (CIDR) here. JUDGE_BASE_URL_ALLOWED_HOSTS is the old
# name of the same list and is still read.
OUTBOUND_ALLOWED_HOSTS = [
    h.strip()
    for h in (
        os.environ.get("OUTBOUND_ALLOWED_HOSTS", "") + "," + os.environ.get("JUDGE_BASE_URL_ALLOWED_HOSTS", "")
    ).split(",")
    if h.strip()
]
VERIFIER_THREADS = int(os.environ.get("VERIFIER_THREADS", "1"))
# Bounded verifier work per request (judges/budget.py, README "Reliability"). Hard: refused with 413.
GROUNDING_CHECK_MAX_BODY_BYTES = int(os.environ.get("GROUNDING_CHECK_MAX_BODY_BYTES", str(400 * 1024)))
GROUNDING_MAX_SOURCE_CHARS = int(os.environ.get("GROUNDING_MAX_SOURCE_CHARS", "100000"))
# Soft: the check runs on what fits; the claims left over are "unverifiable" with a warning.
VERIFIER_MAX_SOURCE_CHARS = int(os.environ.get("VERIFIER_MAX_SOURCE_CHARS", "8000"))
VERIFIER_MAX_CLAIMS = int(os.environ.get("VERIFIER_MAX_CLAIMS", "16"))
VERIFIER_MAX_PAIRS = int(os.environ.get("VERIFIER_MAX_PAIRS", "1500"))
VERIFIER_MAX_CLAIM_CHARS = int(os.environ.get("VERIFIER_MAX_CLAIM_CHARS", "3000"))
VERIFIER_NLI_MODEL_DIR = os.environ.get("VERIFIER_NLI_MODEL_DIR") or None

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
if not DEBUG and env_bool("HTTPS", False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    CSRF_COOKIE_HTTPONLY = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Probes come over plain HTTP from the load balancer: a redirect would hide a 503 (and counts
    # as a success to a Kubernetes probe), so both answer as they are.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]

# --- Ecosystem: metrics, rate limits, login throttling, webhooks, OTLP (issue 13) ---------------
# /metrics answers a scraper that sends `Authorization: Bearer <METRICS_TOKEN>`; with no token set,
# only a loopback client. Tenant slugs become a label only when asked (one series per tenant).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_TENANT_LABELS = env_bool("METRICS_TENANT_LABELS", False)
METRICS_CELERY_QUEUES = [q.strip() for q in os.environ.get("METRICS_CELERY_QUEUES", "celery").split(",") if q.strip()]

# Per-API-key request limit (tenants/throttling.py): "<n>/<s|min|hour|day>", or "off".
API_RATE_LIMIT = os.environ.get("API_RATE_LIMIT", "1200/min")

# Dashboard sign-in throttling (tenants/login_throttle.py, docs/security.md): failures are limited per
# account from one address, per address and per account, and a pause lasts LOGIN_COOLOFF_MINUTES from
# the failure that started it (attempts during it are not counted). The address is the client's as
# TRUSTED_PROXY_COUNT says: behind a reverse proxy set it to the number of proxies in front of the
# server, or every client is the proxy's address.
AUTHENTICATION_BACKENDS = ["tenants.login_backends.LoginThrottleBackend"]
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
LOGIN_ADDRESS_FAILURE_LIMIT = int(os.environ.get("LOGIN_ADDRESS_FAILURE_LIMIT", "30"))
LOGIN_ACCOUNT_FAILURE_LIMIT = int(os.environ.get("LOGIN_ACCOUNT_FAILURE_LIMIT", "20"))
LOGIN_COOLOFF = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))

# Webhooks (webhooks/): https:// URLs only, except hosts listed here, which may also be http:// and
# resolve to private or loopback addresses (an operator's own receivers). core/outbound.py reads both.
WEBHOOK_ALLOWED_HOSTS = [h.strip() for h in os.environ.get("WEBHOOK_ALLOWED_HOSTS", "").split(",") if h.strip()]

# OTLP trace ingest (POST /v1/traces): the limit on a body once gunzipped; the wire size is
# MAX_BODY_BYTES like every request.
OTLP_MAX_BODY_BYTES = int(os.environ.get("OTLP_MAX_BODY_BYTES", str(8 * 1024 * 1024)))

# --- Members: the first workspace, invitations, email (docs/members-and-invitations.md) ---------
# The address people open, e.g. https://groundrule.example.com: links in emails and from commands
# (`manage.py invite`) are built on it. Empty: pages use the request's own host; commands need --url.
PUBLIC_URL = os.environ.get("PUBLIC_URL", "").strip().rstrip("/")
# How long an invitation link stays valid.
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
#: OIDC_NAME: the provider's name on the sign-in button, "Sign in with <name>"
OIDC_NAME = os.environ.get("OIDC_NAME", "single sign-on").strip() or "single sign-on"
#: OIDC_SCOPES: the scopes asked for; must include openid and email
OIDC_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile").split()
#: OIDC_ALLOWED_DOMAINS: comma-separated email domains that get an account (no workspace) without an invitation
OIDC_ALLOWED_DOMAINS = [
    d.strip().lower().lstrip("@") for d in os.environ.get("OIDC_ALLOWED_DOMAINS", "").split(",") if d.strip()
]
#: OIDC_ONLY: true turns password sign-in off; the sign-in page shows only the SSO button
OIDC_ONLY = env_bool("OIDC_ONLY", False)
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
# Mail goes through SMTP when EMAIL_HOST is set, else to the console (the process's standard output,
# which is where `make run` shows invitation emails). EMAIL_BACKEND names any other Django backend.
# Django 6.1 reads mail settings from MAILERS; these variables fill its default mailer.
_email_host = os.environ.get("EMAIL_HOST", "")
_email_backend = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend" if _email_host else "django.core.mail.backends.console.EmailBackend"
)
# STARTTLS on 587 by default; EMAIL_USE_SSL=1 is implicit TLS (port 465). Django allows only one of them.
_email_ssl = env_bool("EMAIL_USE_SSL", False)
_email_options = {}
if _email_backend == "django.core.mail.backends.smtp.EmailBackend":
    _email_options = {
        "host": _email_host or "localhost",
        "port": int(os.environ.get("EMAIL_PORT", "465" if _email_ssl else "587")),
        "username": os.environ.get("EMAIL_HOST_USER", ""),
        "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
        "use_ssl": _email_ssl,
        "use_tls": env_bool("EMAIL_USE_TLS", not _email_ssl),
        "timeout": int(os.environ.get("EMAIL_TIMEOUT", "10")),
    }
MAILERS = {"default": {"BACKEND": _email_backend, "OPTIONS": _email_options}}
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Groundrule <groundrule@localhost>")
