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
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from apps.core.roles import OPS, PROCUREMENT, TECHNICAL_LEAD, grant_role_permissions

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"

# Playwright's sync API runs an event loop in this thread; Django's ORM would otherwise
# refuse to run in the same thread as a live loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROLE_NAMES = {
    "lead": TECHNICAL_LEAD.name,
    "ops": OPS.name,
    "procurement": PROCUREMENT.name,
    "reader": None,  # signed in, no role: reads everything, changes nothing
    "admin": None,  # superuser
}
TEST_PASSWORD = "correct-horse-battery-staple"
SERVICE_START = datetime(2022, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2's deliberate slowness would dominate a suite that creates many users."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_report_cache():
    """Each test starts with no cached report figures reachable (apps/reports/cache.py):
    the cache outlives the test database's rollbacks."""
    from apps.reports.cache import bump_reports_version

    bump_reports_version()


@pytest.fixture(autouse=True)
def no_report_warm_ups(settings):
    """Writes in tests do not queue report warm-ups (apps/reports/cache.py) for a worker
    that is not there; the tests of warm-ups turn them on."""
    settings.REPORTS_WARM_UP = False


@pytest.fixture
def role_groups(db):
    """The role groups as the data migrations leave them (transactional tests flush them)."""
    grant_role_permissions(django_apps)
    return {group.name: group for group in Group.objects.all()}


@pytest.fixture
def make_user(role_groups):
    def make(role: str):
        user_model = get_user_model()
        user = user_model.objects.create_user(
            username=f"{role}-{uuid.uuid4().hex[:6]}",
            password=TEST_PASSWORD,
            first_name=role.capitalize(),
            is_superuser=role == "admin",
            is_staff=role == "admin",
        )
        if ROLE_NAMES[role]:
            user.groups.add(role_groups[ROLE_NAMES[role]])
        return user

    return make


@pytest.fixture
def catalog(db):
    """The seeded catalog (apps/catalog/data/). Its data migration fills it; transactional
    tests flush it, so it is restored here when missing."""
    from apps.catalog.models import GpuModel, ModelArchitecture
    from apps.catalog.seed import load_gpu_models, load_model_architectures

    load_gpu_models(GpuModel, overwrite=False)
    load_model_architectures(ModelArchitecture, overwrite=False)


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
    from apps.pools.models import Deployment, Pool, Purpose

    pool = Pool(
        name="Test H100 training",
        slug="test-h100-training",
        purpose=Purpose.TRAINING,
        deployment=Deployment.CLOUD_ON_DEMAND,
        gpu_model=gpu_model,
        gpu_count=16,
        gpus_per_node=8,
        on_demand_price_per_gpu_hour_usd=Decimal("2.99"),
        # The tests' telemetry is dated 2022 onwards: a pool backfilled from then on.
        in_service_from=SERVICE_START,
    )
    pool.refresh_effective_price()
    pool.save()
    return pool


@pytest.fixture
def workload(pool, architecture):
    from apps.pools.models import Workload, WorkloadKind

    return Workload.objects.create(
        name="Test fine-tune",
        slug="test-fine-tune",
        kind=WorkloadKind.FULL_FINE_TUNE,
        model_architecture=architecture,
        pool=pool,
        gpu_count=8,
        data_parallel=8,
        zero_stage=3,
    )


class CeleryWorker:
    """A real ``celery worker`` process (solo pool) on its own queue, using the test
    database; tests can kill it. ``name`` is the worker's node name."""

    def __init__(self, queue: str, log_name: str, extra_env: dict | None = None):
        from django.db import connection

        database = connection.settings_dict
        self.queue = queue
        self.name = f"{queue}@{socket.gethostname()}"
        self.log_path = ARTIFACTS_DIR / log_name
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
                f"{queue}@%h",
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
def celery_worker_process(django_db_setup, django_db_blocker):
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
