# gpufleet — two commands do everything:
#   make run    install, migrate, load demo data, serve http://127.0.0.1:8000 with its
#               worker and beat, on an embedded PostgreSQL and Redis unless configured
#   make test   install, check services, lint, migrations check, API schema check,
#               collectstatic, the docs site (mkdocs build --strict), pytest
#   make fuzz   Schemathesis on every API operation as every role (before a release)
# on PostgreSQL + Redis (defaults below; override TEST_DATABASE_URL / TEST_REDIS_URL).

SHELL := /bin/bash
# The first Python 3.11+ that runs: a pyenv shim of a version that is not installed
# exists on PATH but fails, quietly. 3.13 comes last: the embedded Redis's wheel has no
# build for it yet and compiles from source there.
PYTHON ?= $(shell for candidate in python3.12 python3.11 python3.13 python3; do \
	if $$candidate -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then \
	echo $$candidate; break; fi; done)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/gpufleet
# xdist worker N uses this Redis database's number minus N (tests/conftest.py): 15, 14, 13.
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# pytest-xdist processes. The suite waits on Celery workers, servers and browsers about
# as much as it computes (a quiet run's processes use about one core of two), so three
# keep two cores busier than two do; 0 runs it in one process. Work stealing: a process
# that runs out takes half of another's queue, so a test that waits a minute does not
# leave one process finishing the suite alone.
TEST_WORKERS ?= 3
TEST_ENV := DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
	CELERY_BROKER_URL=$(TEST_REDIS_URL) DJANGO_SETTINGS_MODULE=config.settings

# The FinOps Foundation's focus-validator (scripts/ensure_focus_validator.sh) in the user's
# cache, where a new clone finds it, for the script and the test that runs it.
FOCUS_VALIDATOR_VERSION ?= 2.2.1
export FOCUS_VALIDATOR_VERSION
export FOCUS_VALIDATOR_VENV ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gpufleet/focus-validator-$(FOCUS_VALIDATOR_VERSION)

# make run DEMO=no: your own fleet only, without the demo.
DEMO ?= yes
RUN_ARGS := --host $(HOST) --port $(PORT) $(if $(filter no,$(DEMO)),--without-demo)

.PHONY: run dev test fuzz install lint format clean backup restore \
	test-system-packages test-services test-peers test-lint test-django-checks \
	test-static-and-docs test-database-template

# Python caches bytecode here even where the machine sets PYTHONDONTWRITEBYTECODE: every
# process the suite and `make run` start (test workers, Celery, commands) would otherwise
# compile the project from source, and pytest would rewrite every test module's asserts
# on each run.
unexport PYTHONDONTWRITEBYTECODE

$(INSTALLED): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: gpufleet needs Python 3.11 or newer (python3.11+ not found on PATH)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(INSTALLED)

install: $(INSTALLED)
	scripts/ensure_oidc_provider.sh

# The web server, a Celery worker and beat under one supervisor (manage.py run); Ctrl-C
# stops them all.
run: $(INSTALLED)
	@$(BIN)/python manage.py run $(RUN_ARGS)

# The same with Django's runserver: DEBUG pages and code reloading.
dev: $(INSTALLED)
	@$(BIN)/python manage.py run --dev $(RUN_ARGS)

# What must hold before pytest, three at a time (make -j3): the venv's install beside the
# machine's packages (apt-get and focus-validator download while pip does); once the venv
# is there, the linters, the Django checks (both read every migration), the test
# databases' migrated template, the static files with the docs site, and the peers the
# suite drives, checked once their packages are in. Each step's output is printed whole
# when it ends.
test:
	@# The embedded servers ensure_services.sh started, if any, stop with the suite, or
	@# with the first check that fails.
	@$(MAKE) --no-print-directory -j3 --output-sync=target \
		test-peers test-lint test-django-checks test-static-and-docs test-database-template \
		|| { test ! -x $(BIN)/python || $(BIN)/python scripts/embedded_test_services.py stop; \
			exit 1; }
	$(TEST_ENV) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS); \
		status=$$?; $(BIN)/python scripts/embedded_test_services.py stop; exit $$status

# The Debian packages of the peers in one apt-get run, and focus-validator's own venv:
# neither needs the project's venv.
test-system-packages:
	scripts/ensure_debian_packages.sh
	scripts/ensure_focus_validator.sh

# PostgreSQL and Redis answering on the test addresses (embedded ones started if none).
test-services: $(INSTALLED)
	PYTHON=$(BIN)/python DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		scripts/ensure_services.sh

# Each peer checked (and installed, where test-system-packages could not), one after
# another: apt-get runs one process at a time.
test-peers: $(INSTALLED) test-system-packages test-services
	scripts/ensure_chromium.sh
	scripts/ensure_poppler.sh
	scripts/ensure_prometheus.sh
	scripts/ensure_victoria_metrics.sh
	scripts/ensure_slurm.sh
	scripts/ensure_focus_validator.sh
	scripts/ensure_gettext.sh
	scripts/ensure_oidc_provider.sh

test-lint: lint

# makemigrations --check compares the models with the migrations (and reads the database's
# history of them): after the services.
test-django-checks: $(INSTALLED) test-services
	$(TEST_ENV) $(BIN)/python manage.py makemigrations --check --dry-run
	$(TEST_ENV) $(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null

# The migrated template every pytest process copies its test database from
# (tests/migrated_template.py), made now unless current: pytest's processes would otherwise
# both wait while one of them migrates it.
test-database-template: $(INSTALLED) test-services
	$(TEST_ENV) $(BIN)/python -m tests.migrated_template

# The docs site (docs/, mkdocs.yml): a broken link or a page left out of the nav fails.
test-static-and-docs: $(INSTALLED)
	$(TEST_ENV) $(BIN)/python manage.py collectstatic --noinput --verbosity 0
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir var/docs-site

# Schemathesis, every check, on every API operation as every role, FUZZ_EXAMPLES cases
# each plus the examples and coverage phases (make test runs a smoke sample of the same
# test); docs-fuzz.md. FUZZ_ROLES=lead,ops narrows it.
FUZZ_EXAMPLES ?= 30
FUZZ_ROLES ?= admin,lead,ops,procurement,finance,reader
fuzz: $(INSTALLED)
	PYTHON=$(BIN)/python DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		scripts/ensure_services.sh
	$(TEST_ENV) $(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null
	$(TEST_ENV) FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_ROLES=$(FUZZ_ROLES) \
		$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal tests/test_api_schema.py \
		$(PYTEST_ARGS); \
		status=$$?; $(BIN)/python scripts/embedded_test_services.py stop; exit $$status

# gpufleet's own database into var/backups/ (BACKUP_DIR); restore the newest, or BACKUP=path.
backup: $(INSTALLED)
	$(BIN)/python manage.py backup_database

restore: $(INSTALLED)
	$(BIN)/python manage.py restore_database $(BACKUP)

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: $(INSTALLED)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var/staticfiles var/docs-site test-artifacts .pytest_cache .ruff_cache
