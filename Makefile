# The two commands: `make run` (set up and start everything) and `make test` (set up and test).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-postgres lint format venv redis-libssl browser postgres xmlsec xmlsec-if-saml nginx libreoffice libreoffice-if-root gettext messages makemessages clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

# OpenSSL 1.1 for the bundled Redis Stack, unpacked under var/ (skipped when REDIS_URL is set).
redis-libssl: $(STAMP)
	@if [ -z "$$REDIS_URL" ]; then $(BIN)/python -m scripts.redis_stack libssl >/dev/null; fi

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "Browser tests need Debian's chromium: sudo apt-get install chromium"; exit 1; fi; }

# Debian's PostgreSQL for the second run of the suite (tests/services.py starts a throwaway cluster).
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; \
	  else echo "The PostgreSQL run of the tests needs Debian's postgresql: sudo apt-get install postgresql"; exit 1; fi; }

# Debian's xmlsec1: pysaml2 signs and verifies SAML assertions with it (campus sign-in, sso/saml.py).
xmlsec:
	@command -v xmlsec1 >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq xmlsec1 >/dev/null; \
	  else echo "SAML sign-in needs Debian's xmlsec1: sudo apt-get install xmlsec1"; exit 1; fi; }

# make run needs xmlsec1 only when SAML sign-in is configured.
xmlsec-if-saml:
	@if [ -n "$$SAML_IDP_METADATA" ] || grep -qs '^SAML_IDP_METADATA=.' .env; then $(MAKE) --no-print-directory xmlsec; fi

# Debian's nginx for the deployment test (tests/test_deployment.py runs deploy/nginx/currechat.conf
# in front of real web processes; it starts its own nginx on free ports, never the system's).
nginx:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nginx >/dev/null; \
	  else echo "The deployment test needs Debian's nginx: sudo apt-get install nginx"; exit 1; fi; }

# Debian's LibreOffice (Impress, no GUI): slides get page images from the PDF it makes of them at
# ingestion (rag/ingest/slides.py). Without it, slides are still read and shown as text.
libreoffice:
	@command -v soffice >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq libreoffice-impress-nogui >/dev/null; \
	  else echo "Slide images need Debian's LibreOffice: sudo apt-get install libreoffice-impress-nogui"; exit 1; fi; }

# make run installs it when it can, and otherwise goes on: the slides are then shown as text (a note
# on the file says why).
libreoffice-if-root:
	@command -v soffice >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory libreoffice; \
	  else echo "Slides are shown as text only until LibreOffice draws them: sudo apt-get install libreoffice-impress-nogui"; fi; }

# Debian's gettext for compiling the translation catalogues (locale/*/LC_MESSAGES/*.po).
gettext:
	@command -v msgfmt >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq gettext >/dev/null; \
	  else echo "The Finnish and Swedish interface needs Debian's gettext: sudo apt-get install gettext"; exit 1; fi; }

# The .mo files are generated from the committed .po files (and not committed).
messages: $(STAMP) gettext
	DEBUG=1 $(BIN)/python manage.py compilemessages --ignore=.venv --ignore=node_modules --ignore=var -v 0

# After marking new strings: update the catalogues, then translate every new entry (no empty or fuzzy
# msgstr may remain: tests/test_i18n.py checks).
I18N_IGNORE := --ignore=.venv --ignore=node_modules --ignore=var --ignore=tests --ignore=bench
makemessages: $(STAMP) gettext
	DEBUG=1 $(BIN)/python manage.py makemessages -l fi -l sv $(I18N_IGNORE)
	DEBUG=1 $(BIN)/python manage.py makemessages -d djangojs -l fi -l sv $(I18N_IGNORE)

# axe-core, injected into pages by the browser tests to check accessibility; oidc-provider, the
# OpenID Provider the sign-in tests run with Node.
node_modules/axe-core/axe.min.js: package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $@

run: $(STAMP) redis-libssl messages xmlsec-if-saml libreoffice-if-root
	$(BIN)/python scripts/run.py

# mypy's Django plugin loads the settings, which need a SECRET_KEY unless DEBUG is on. lint-imports
# checks the layer contracts of .importlinter (docs/ARCHITECTURE.md).
lint: $(STAMP)
	$(BIN)/ruff check --no-cache .
	$(BIN)/ruff format --no-cache --check .
	DEBUG=1 $(BIN)/mypy
	$(BIN)/lint-imports --no-cache

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# In parallel: each pytest-xdist worker starts its own Redis Stack and test model server
# (tests/services.py); the browser tests share one worker, so their live app starts once.
PYTEST_WORKERS ?= 2
PARALLEL := -n $(PYTEST_WORKERS) --dist loadgroup

test: $(STAMP) redis-libssl browser postgres xmlsec nginx libreoffice gettext messages node_modules/axe-core/axe.min.js lint
	$(BIN)/python -m pytest $(PARALLEL) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-postgres

# The suite again on PostgreSQL (every model, migration and write path; the browser tests, which
# exercise pages rather than the database, run on SQLite only; the deployment test runs on its own
# PostgreSQL in both runs, so once is enough).
test-postgres: $(STAMP) redis-libssl postgres xmlsec messages node_modules/axe-core/axe.min.js
	TEST_DATABASE=postgres $(BIN)/python -m pytest $(PARALLEL) -m "not browser and not deployment" $(PYTEST_ARGS)

# Quick feedback while working: no browser tests, no tests marked slow, no type check.
test-fast: $(STAMP) redis-libssl xmlsec messages node_modules/axe-core/axe.min.js
	$(BIN)/python -m pytest $(PARALLEL) -m "not browser and not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache
