"""Settings for the test suite: the production settings with test keys and fast password hashing."""

import os

# Test-only values, so the production refusal of development keys (config.settings) holds in tests too.
os.environ.setdefault("SECRET_KEY", "groundrule-test-suite-secret-key-0123456789abcdef-not-for-production")
os.environ.setdefault("GOVERNANCE_SECRETS_KEY", "groundrule-test-suite-secrets-key")
os.environ.setdefault(
    "AUDIT_SIGNING_KEYS", "test-2026:XELfnV0VTuZN+RXmkH3K+Bdxg1NemGAxne4V7NwH980="
)  # test-only Ed25519 seed

from .settings import *  # noqa: F403

# Hashing every test user's password with PBKDF2 cost more than half of the suite's time.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Tests change audit rows and read decisions within milliseconds: no reuse of the 7-day inflation
# (tests/test_score_audit.py turns it on where the reuse itself is tested).
SCORE_AUDIT_INFLATION_CACHE_SECONDS = 0

# No installed NLI model unless a test installs one (a developer's var/verifier-model stays out).
VERIFIER_MODEL_STORE = os.environ.get("VERIFIER_MODEL_STORE") or None
