"""Shared fixtures: role users, demo objects, a real Celery worker, and Chromium.

The suite runs against PostgreSQL and Redis (``make test`` sets DATABASE_URL and
REDIS_URL); tests that need committed rows across processes (worker, browser) use
``transaction=True``.
"""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group

from tests.factories import (
    PoolFactory,
    UserFactory,
    WorkloadFactory,
)
from tests.flush import use_the_fast_flush
from tests.migrated_template import copy_test_databases_from_a_migrated_template
from tests.waiting import wait_until

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"

# Playwright's sync API runs an event loop in this thread; Django's ORM would otherwise
# refuse to run in the same thread as a live loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# pytest-xdist's worker id (gw0, gw1, …), or "" when the tests run in this one process.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def _own_redis_database_per_xdist_worker():
    """Each xdist worker talks to a Redis database of its own: REDIS_URL's number minus
    the worker's index (gw0 keeps it, gw1 the one below, …). pytest-django already gives
    each worker its own test database; Redis needs the same, or one worker's cache
    versions, throttle counts and queue purges would reach into the other's tests.

    Django's settings are loaded before this module (pytest-django loads them first), but
    neither the cache connections nor the Celery app's configuration have been read yet,
    so the settings are changed in place. The environment changes too: the Celery workers
    and management commands that tests start in subprocesses inherit it.
    """
    from django.conf import settings

    if not XDIST_WORKER or not settings.REDIS_URL:
        return
    index = int(XDIST_WORKER.removeprefix("gw"))
    shared = settings.REDIS_URL
    number = int(urlsplit(shared).path.lstrip("/") or 0) - index
    if number < 0:
        raise pytest.UsageError(
            f"xdist worker {XDIST_WORKER} needs Redis database {number}: "
            f"REDIS_URL ({shared}) must name a database of at least {index}"
        )
    own = urlsplit(shared)._replace(path=f"/{number}").geturl()
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        if getattr(settings, name, None) == shared:
            setattr(settings, name, own)
        if os.environ.get(name) == shared:
            os.environ[name] = own
    settings.CACHES["default"]["LOCATION"] = own

    from django.core.cache import caches

    from config.celery_app import app as celery_app

    assert "settings" not in caches.__dict__, "the cache was configured before conftest"
    assert not celery_app.configured, "the Celery app was configured before conftest"


def _scan_each_static_root_once():
    """WhiteNoise stats every file under STATIC_ROOT and builds its headers whenever a
    middleware chain is built, and Django's test client builds a chain for every test, so
    a short page test would spend much of its time reading the same directory again.
    The scan is kept per directory and per WhiteNoise setting that shapes a file's
    headers (media types and the immutable-file test included). The static root is written
    once, by collectstatic before the suite; a test that writes static files does so into
    a directory of its own, which gets a scan of its own."""
    from whitenoise.base import WhiteNoise

    scan = WhiteNoise.update_files_dictionary
    scanned = {}

    def update_files_dictionary(self, root, prefix):
        key = (
            root,
            os.stat(root).st_mtime_ns,
            prefix,
            self.max_age,
            self.allow_all_origins,
            self.charset,
            self.index_file,
            self.add_headers_function,
            # A method of the middleware, bound to each new instance: its function.
            getattr(self.immutable_file_test, "__func__", self.immutable_file_test),
            tuple(sorted(self.media_types.types_map.items())),
        )
        if key not in scanned:
            files, self.files = self.files, {}
            try:
                scan(self, root, prefix)
                scanned[key] = self.files
            finally:
                self.files = files
        self.files.update(scanned[key])

    WhiteNoise.update_files_dictionary = update_files_dictionary


_own_redis_database_per_xdist_worker()
_scan_each_static_root_once()
copy_test_databases_from_a_migrated_template()

# The OpenID Connect provider of the SSO tests (tests/oidc_provider/).
pytest_plugins = ["tests.oidc_provider.fixtures"]


def _name_each_schemathesis_operation(item):
    """Schemathesis makes one test per API operation, named ``test…[GET /api/v1/…]``, but
    pytest 9.2 builds a test's id from the function's name and its parameters only, so
    all of them would share one id. pytest-xdist hands tests to its workers by id, and
    runs only one test of an id shared by many: each keeps its operation in its id."""
    label = getattr(item, "operation_label", None)
    node_id = getattr(item, "_id", None)
    if label and node_id is not None and node_id.params is None:
        item._id = node_id.with_params(label)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Tests with a real Celery worker mostly wait for it, the longest over a minute: they
    run first, so that their waits overlap the other xdist worker's tests instead of
    ending the run alone. This hook runs after pytest-django's sort (database tests,
    transactional ones, then the rest), which holds for the others: the sort is stable."""
    for item in items:
        _name_each_schemathesis_operation(item)
    items.sort(key=lambda item: item.get_closest_marker("worker") is None)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The migrated database; transactional tests end by putting it back as it is now
    (tests/flush.py), the role groups and the catalog included."""
    with django_db_blocker.unblock():
        use_the_fast_flush(["default"])


@pytest.fixture(autouse=True)
def default_language():
    """Each test starts in the default language (English): a request in another language
    leaves it active in the thread (LocaleMiddleware activates it and does not undo it),
    and the code a later test calls without a request would speak it."""
    from django.conf import settings
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2's deliberate slowness would dominate a suite that creates many users."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_report_cache():
    """Each test starts with no cached report figures reachable and no pages remembered
    as recently viewed (apps/reports/cache.py): the cache outlives the test database's
    rollbacks, and a worker still warming another test's remembered pages would cache
    them under this test's version."""
    from django.core.cache import cache

    from apps.reports.cache import RECENT_KEY, bump_reports_version

    cache.delete(RECENT_KEY)
    bump_reports_version()


@pytest.fixture(autouse=True)
def no_report_warm_ups(settings):
    """Writes in tests do not queue report warm-ups (apps/reports/cache.py) for a worker
    that is not there; the tests of warm-ups turn them on."""
    settings.REPORTS_WARM_UP = False


@pytest.fixture
def role_groups(db):
    """The role groups as the data migrations create them."""
    return {group.name: group for group in Group.objects.all()}


@pytest.fixture
def make_user(db):
    """``make_user("ops")``: a new user holding that role (see tests/factories.py)."""

    def make(role: str):
        return UserFactory(role=role)

    return make


@pytest.fixture
def catalog(db):
    """The seeded catalog (apps/catalog/data/), as its data migration fills it."""


@pytest.fixture
def gpu_model(catalog):
    """H100 SXM as the catalog seeds it."""
    from apps.catalog.models import GpuModel

    return GpuModel.objects.get(slug="h100-sxm")


@pytest.fixture
def architecture(catalog):
    from apps.catalog.models import ModelArchitecture

    return ModelArchitecture.objects.get(slug="llama-3-8b")


@pytest.fixture
def pool(gpu_model):
    """A 16 × H100 SXM cloud training pool at $2.99 per GPU-hour, in service since 2022."""
    return PoolFactory(name="Test H100 training", slug="test-h100-training", gpu_model=gpu_model)


@pytest.fixture
def workload(pool, architecture):
    """A Llama-3-8B full fine-tune on 8 of the pool's GPUs (data parallel 8, ZeRO-3)."""
    return WorkloadFactory(
        name="Test fine-tune", slug="test-fine-tune", pool=pool, model_architecture=architecture
    )


@pytest.fixture(scope="session")
def demo_rows(django_db_setup, django_db_blocker):
    """What ``seed_demo`` adds to a migrated database, computed once per session."""
    from django.core.management import call_command
    from django.db import transaction

    from tests.snapshots import capture_added_rows

    with django_db_blocker.unblock(), transaction.atomic():
        # Without teams: the tests reading the demo see the whole fleet as any user
        # (tests/showback/test_demo.py seeds the teams and budgets).
        rows = capture_added_rows(
            lambda: call_command("seed_demo", verbosity=0, without_teams=True)
        )
        transaction.set_rollback(True)
    return rows


@pytest.fixture
def demo(db, demo_rows):
    """The demo fleet of ``seed_demo`` (pools, workloads, 28 days of usage, backups,
    scenarios and the demo users) in this test's database, for tests that read it.
    Tests of seed_demo itself run the command."""
    from apps.reports.cache import bump_reports_version
    from tests.snapshots import restore_rows

    restore_rows(demo_rows)
    # The copied rows bypass the ORM, so nothing tells the reports cache; a write would,
    # and figures cached (or being warmed by a worker) before describe a fleet without them.
    bump_reports_version()


class CeleryWorker:
    """A real ``celery worker`` process (solo pool) on its own queue, using the test
    database; tests can kill it. ``name`` is the worker's node name."""

    def __init__(
        self, queue: str, log_name: str, extra_env: dict | None = None, node: str | None = None
    ):
        from django.db import connection

        database = connection.settings_dict
        self.queue = queue
        # Several workers may consume one queue; each needs a node name of its own.
        node = node or queue
        self.name = f"{node}@{socket.gethostname()}"
        # Parallel xdist workers each start their own workers: one log file apiece.
        self.log_path = ARTIFACTS_DIR / (f"{XDIST_WORKER}-{log_name}" if XDIST_WORKER else log_name)
        ARTIFACTS_DIR.mkdir(exist_ok=True)
        self._log = self.log_path.open("w")
        environment = {
            **os.environ,
            "DATABASE_URL": (
                f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
                f"{database['PORT'] or 5432}/{database['NAME']}"
            ),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            # Tasks the worker itself enqueues (rollups after an import) stay on its queue.
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            **(extra_env or {}),
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config.celery_app",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "-Q",
                queue,
                "-n",
                f"{node}@%h",
            ],
            cwd=REPO_ROOT,
            env=environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.pid = self.process.pid

    def wait_until_ready(self, timeout_seconds=60):
        from config.celery_app import app as celery_app

        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"celery worker exited early:\n{self.log_path.read_text()}")
            if celery_app.control.ping(destination=[self.name], timeout=1):
                return
        pytest.fail(f"celery worker did not answer a ping within {timeout_seconds} s")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self._log.close()


@pytest.fixture(scope="session")
def _celery_worker_for_the_session(django_db_setup, django_db_blocker):
    """A real worker on Redis, writing to the test database, for the whole session.

    It consumes a queue of its own, so no other worker on the same Redis steals tasks.
    """
    from django.conf import settings

    from config.celery_app import app as celery_app

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.CELERY_BROKER_URL:
        pytest.fail("The worker tests need CELERY_BROKER_URL (make test sets it to Redis).")
    worker = CeleryWorker(f"gpufleet-test-{uuid.uuid4().hex[:8]}", "celery-worker.log")
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = worker.queue
    try:
        worker.wait_until_ready()
        yield {"queue": worker.queue, "pid": worker.pid, "name": worker.name}
    finally:
        celery_app.conf.task_default_queue = previous_queue
        worker.stop()


@pytest.fixture
def celery_worker_process(_celery_worker_for_the_session):
    """The session's worker, left idle when the test ends: what a test's tasks enqueue in
    turn (a rollup's warm-up) must not still be reading tables while the test's database
    is flushed, which deadlocks the flush."""
    yield _celery_worker_for_the_session
    _wait_until_idle(_celery_worker_for_the_session["name"])


def _wait_until_idle(worker_name, timeout_seconds=60):
    from config.celery_app import app as celery_app

    inspector = celery_app.control.inspect(destination=[worker_name], timeout=1)

    def idle():
        active = (inspector.active() or {}).get(worker_name)
        reserved = (inspector.reserved() or {}).get(worker_name)
        with celery_app.connection_for_read() as connection:
            queued = connection.default_channel.client.llen(celery_app.conf.task_default_queue)
        return active == [] and not reserved and not queued

    wait_until(idle, timeout_seconds=timeout_seconds, what="the worker to finish its tasks")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Drive Debian's Chromium; Playwright's own browser download is not possible here."""
    return {
        **browser_type_launch_args,
        "executable_path": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture(scope="session")
def screenshot_dir():
    path = ARTIFACTS_DIR / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def eager_celery():
    """Run enqueued tasks inline (the suite's settings send them to Redis)."""
    from config.celery_app import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def media_root(settings, tmp_path):
    """Uploads and exports written under this test's own directory."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT
