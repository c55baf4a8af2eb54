"""Client settings: explicit arguments win, then GROUNDRULE_URL / GROUNDRULE_API_KEY."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ConfigurationError

API_PREFIX = "/api/v1"


@dataclass(frozen=True, slots=True)
class Config:
    api_root: str  # e.g. http://127.0.0.1:8000/api/v1
    api_key: str
    timeout: float
    fail_open: bool
    max_retries: int
    backoff_base: float
    backoff_max: float


def resolve_config(
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    fail_open: bool,
    max_retries: int,
    backoff_base: float,
    backoff_max: float,
) -> Config:
    base_url = base_url or os.environ.get("GROUNDRULE_URL") or ""
    api_key = api_key or os.environ.get("GROUNDRULE_API_KEY") or ""
    if not base_url:
        raise ConfigurationError(
            "No Groundrule server URL: pass base_url=... or set GROUNDRULE_URL (e.g. http://127.0.0.1:8000)."
        )
    if not base_url.startswith(("http://", "https://")):
        raise ConfigurationError(f"base_url must start with http:// or https://, got {base_url!r}.")
    if not api_key:
        raise ConfigurationError(
            "No Groundrule API key: pass api_key=... or set GROUNDRULE_API_KEY "
            "(create one with `python manage.py create_api_key SLUG`)."
        )
    if timeout <= 0:
        raise ConfigurationError("timeout must be a positive number of seconds.")
    if max_retries < 0:
        raise ConfigurationError("max_retries must be 0 or more.")
    if backoff_base < 0 or backoff_max < 0:
        raise ConfigurationError("backoff_base and backoff_max must not be negative.")
    root = base_url.rstrip("/")
    # Accept both the server root and the API root, so a copied ".../api/v1" URL also works.
    if not root.endswith(API_PREFIX):
        root += API_PREFIX
    return Config(
        api_root=root,
        api_key=api_key,
        timeout=float(timeout),
        fail_open=bool(fail_open),
        max_retries=int(max_retries),
        backoff_base=float(backoff_base),
        backoff_max=float(backoff_max),
    )
