# The two commands: `make run` (set up and start everything) and `make test` (set up and test).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Debian packages, installed as root, waiting a bounded time for another apt process (scripts/apt-install):
# `make test` waits up to 10 minutes and says what for; `make run` waits a minute for what it can do
# without, then starts without it and says in one line what is missing and how to add it.
APT_INSTALL := scripts/apt-install
RUN_OPTIONAL := --optional --wait $${RUN_APT_LOCK_WAIT:-60}

.PHONY: run test test-fast test-postgres lint format venv redis-libssl browser postgres xmlsec xmlsec-if-saml nginx libreoffice libreoffice-if-root gettext messages messages-if-gettext makemessages clean

# pip compiles every installed module to bytecode one file at a time (50 of its 80 s here); compileall
# does it on every core. Like pip, it passes over the few files of a library's own tests that only a
# newer Python parses (torch's py312 intrinsics).
$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -r requirements-dev.txt
	$(BIN)/python -m compileall -qq -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || true
	touch $(STAMP)

venv: $(STAMP)

# OpenSSL 1.1 for the bundled Redis Stack, unpacked under var/ (skipped when REDIS_URL is set).
redis-libssl: $(STAMP)
	@if [ -z "$$REDIS_URL" ]; then $(BIN)/python -m scripts.redis_stack libssl >/dev/null; fi

# Debian's Chromium for the browser tests (Playwright drives it; it never downloads a browser).
browser:
	@command -v chromium >/dev/null || $(APT_INSTALL) --for "the browser tests" chromium

# Debian's PostgreSQL for the second run of the suite (tests/services.py starts a throwaway cluster).
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || $(APT_INSTALL) --for "the PostgreSQL run of the tests" postgresql

# Debian's xmlsec1: pysaml2 signs and verifies SAML assertions with it (campus sign-in, sso/saml.py).
xmlsec:
	@command -v xmlsec1 >/dev/null || $(APT_INSTALL) --for "SAML sign-in" xmlsec1

# make run needs xmlsec1 only when SAML sign-in is configured, and starts without it (SAML sign-in
# then says it is unavailable) rather than not at all.
xmlsec-if-saml:
	@if [ -n "$$SAML_IDP_METADATA" ] || grep -qs '^SAML_IDP_METADATA=.' .env; then \
	  command -v xmlsec1 >/dev/null || $(APT_INSTALL) $(RUN_OPTIONAL) --for "SAML sign-in" xmlsec1; fi

# Debian's nginx for the deployment test (tests/test_deployment.py runs deploy/nginx/currechat.conf
# in front of real web processes; it starts its own nginx on free ports, never the system's).
nginx:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || $(APT_INSTALL) --for "the deployment test" nginx

# Debian's LibreOffice (Impress, no GUI): slides get page images from the PDF it makes of them at
# ingestion (rag/ingest/slides.py). Without it, slides are still read and shown as text.
libreoffice:
	@command -v soffice >/dev/null || $(APT_INSTALL) --for "slide images" libreoffice-impress-nogui

# make run installs it when it can, and otherwise goes on: the slides are then shown as text (a note
# on the file says why).
libreoffice-if-root:
	@command -v soffice >/dev/null || $(APT_INSTALL) $(RUN_OPTIONAL) --for "slide images (slides are shown as text meanwhile)" libreoffice-impress-nogui

# Debian's gettext for compiling the translation catalogues (locale/*/LC_MESSAGES/*.po).
gettext:
	@command -v msgfmt >/dev/null || $(APT_INSTALL) --for "the Finnish and Swedish interface" gettext

# The .mo files are generated from the committed .po files (and not committed).
messages: $(STAMP) gettext
	DEBUG=1 $(BIN)/python manage.py compilemessages --ignore=.venv --ignore=node_modules --ignore=var -v 0

# make run goes on without gettext (the interface is then in English only, and says how to add it).
messages-if-gettext: $(STAMP)
	@command -v msgfmt >/dev/null || $(APT_INSTALL) $(RUN_OPTIONAL) --for "the Finnish and Swedish interface" gettext
	@if command -v msgfmt >/dev/null; then $(MAKE) --no-print-directory messages; fi

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

run: $(STAMP) redis-libssl messages-if-gettext xmlsec-if-saml libreoffice-if-root
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
# (tests/services.py), and a live app of its own at its first browser test: the browser tests, half
# the suite's time, are shared by the workers like the others. Tests marked with an `xdist_group`
# (an expensive set-up they share) run on one worker. Three workers on two cores: with two, the cores
# stood idle a fifth to a half of the time while tests waited on the processes they start
# (docs/BENCHMARKS.md, "The suite's own time").
PYTEST_WORKERS ?= 3
PARALLEL := -n $(PYTEST_WORKERS) --dist loadgroup

test: $(STAMP) redis-libssl browser postgres xmlsec nginx libreoffice gettext messages node_modules/axe-core/axe.min.js lint
	$(BIN)/python -m pytest $(PARALLEL) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-postgres

# The suite again on PostgreSQL: the tests that reach the database (every model, migration and write
# path; tests/services.py --database-tests-only). The others (settings, parsing, processes on SQLite
# of their own) and the browser tests, which exercise pages rather than the database, ran in the
# SQLite pass; the deployment test runs on its own PostgreSQL in both runs, so once is enough.
test-postgres: $(STAMP) redis-libssl postgres xmlsec messages node_modules/axe-core/axe.min.js
	TEST_DATABASE=postgres $(BIN)/python -m pytest $(PARALLEL) -m "not browser and not deployment" --database-tests-only $(PYTEST_ARGS)

# Quick feedback while working: no browser tests, no tests marked slow, no type check.
test-fast: $(STAMP) redis-libssl xmlsec messages node_modules/axe-core/axe.min.js
	$(BIN)/python -m pytest $(PARALLEL) -m "not browser and not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache
