# syntax=docker/dockerfile:1
# Groundrule server image: web (gunicorn), worker and beat all run from it (deploy/compose.yaml).
# Multi-stage: htmx and Chart.js from npm; the server built as a wheel and installed into a clean
# virtualenv by deploy/build_check.py, which also collects the static files and proves the install
# runs (migrate, check --deploy, gunicorn answering /healthz and /readyz) exactly as
# tests/test_build_check.py does in CI; the runtime stage holds only that virtualenv and the
# collected static files, and runs as a non-root user. No secret is needed to build.

# --- Front-end libraries (htmx, Chart.js) from the npm registry, as `make assets` copies them ----
FROM node:22-bookworm-slim AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --silent \
 && mkdir -p /out \
 && cp node_modules/htmx.org/dist/htmx.min.js /out/htmx.min.js \
 && cp node_modules/chart.js/dist/chart.umd.min.js /out/chart.umd.min.js

# --- The wheel, installed and checked -------------------------------------------------------------
FROM python:3.13-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# The whole context (.dockerignore leaves out tests, benchmarks, the SDK, docs): pyproject.toml
# decides what the wheel holds, so an app added later needs no line here.
COPY . .
COPY --from=assets /out/ ./config/static/vendor/
RUN python -m pip wheel --no-deps --wheel-dir /dist . \
 && python deploy/build_check.py --wheel /dist/groundrule_server-*.whl --venv /venv --static-root /app/staticfiles

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
COPY --from=build /venv /venv
COPY --from=build /app/staticfiles /app/staticfiles
WORKDIR /app
# `python manage.py <command>` works in the container as in a checkout; the code is the installed
# package (/venv), root-owned and read-only to the server's user.
COPY manage.py ./
USER groundrule:groundrule
EXPOSE 8000
# Liveness only (the process answers and reaches its database); compose probes /readyz for traffic.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s CMD ["python", "-m", "config.probe", "/healthz"]
# WEB_CONCURRENCY sets gunicorn's worker count; compose overrides the command for worker and beat.
CMD ["gunicorn", "config.wsgi:application"]
