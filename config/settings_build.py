"""Settings for building an image or a release: `collectstatic` and nothing that serves.

    DJANGO_SETTINGS_MODULE=config.settings_build django-admin collectstatic --noinput

Collecting static files reads no secret and no database, but config.settings refuses to import with
DEBUG off and no SECRET_KEY / GOVERNANCE_SECRETS_KEY (a server must never run on published keys).
Rather than loosen that refusal, the build gets keys of its own, random per process and never
written anywhere, and a database that cannot be queried: a process started on these settings by
mistake cannot sign a session anyone else accepts, cannot read a tenant secret, and fails its first
query (and /healthz with it).
"""

import os
import secrets

os.environ["DEBUG"] = "0"
os.environ["SECRET_KEY"] = "build-only-" + secrets.token_urlsafe(48)
os.environ["GOVERNANCE_SECRETS_KEY"] = "build-only-" + secrets.token_urlsafe(32)

from .settings import *  # noqa: F403

DATABASES = {"default": {"ENGINE": "django.db.backends.dummy"}}
