from datetime import timedelta

import pytest
from django.utils import timezone

from apps.pools.hours import floor_hour
from apps.telemetry.models import PoolHourlyUsage
from apps.telemetry.rollups.days import rebuild_days
from tests.alerts.peers import start_http_receiver, start_smtp_server
from tests.factories import BackupVersionFactory, RestoreDrillFactory, WorkloadFactory
from tests.reports.test_pool_list_columns import _wait_for_next_hour_if_at_its_end


@pytest.fixture
def receiver():
    receiver, server = start_http_receiver()
    yield receiver
    server.shutdown()
    server.server_close()


@pytest.fixture
def mailbox(settings):
    """A real SMTP server that Django's SMTP backend sends to."""
    mailbox, controller = start_smtp_server()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = controller.hostname, controller.port
    settings.EMAIL_USE_TLS = False
    settings.DEFAULT_FROM_EMAIL = "gpufleet@example.com"
    yield mailbox
    controller.stop()


@pytest.fixture
def quick_retries(settings):
    """Retries after 1 s, 2 s, 4 s…: a test waits for a real retry in seconds."""
    settings.ALERT_RETRY_BASE_SECONDS = 1
    settings.ALERT_HTTP_TIMEOUT_SECONDS = 2


@pytest.fixture
def hour_end():
    """The end of the current hour, away from an hour's last seconds, so that the hours a
    test writes are the hours the rules read."""
    _wait_for_next_hour_if_at_its_end()
    return floor_hour(timezone.now()) + timedelta(hours=1)


def write_usage(pool, *, hours: int, busy_fraction: float, end) -> None:
    """``hours`` hours of telemetry ending at ``end``, every GPU reporting, ``busy_fraction``
    of them busy; the daily rows rebuilt as the rollups would."""
    PoolHourlyUsage.objects.filter(pool=pool).delete()
    PoolHourlyUsage.objects.bulk_create(
        PoolHourlyUsage(
            pool=pool,
            hour=end - timedelta(hours=step),
            reporting_gpus=pool.gpu_count,
            capacity_gpu_hours=pool.gpu_count,
            busy_gpu_hours=pool.gpu_count * busy_fraction,
            avg_utilization_pct=busy_fraction * 100,
            max_utilization_pct=busy_fraction * 100,
        )
        for step in range(1, hours + 1)
    )
    rebuild_days(end - timedelta(days=40), end + timedelta(days=1))


def overdue_drill_policy(pool, *, days_ago=40, **workload_values):
    """A workload on ``pool`` whose only restore drill passed ``days_ago`` days ago, with a
    drill due every 30 days: overdue by ``days_ago − 30`` days."""
    workload = WorkloadFactory(pool=pool, **workload_values)
    started = timezone.now() - timedelta(days=days_ago)
    # Kept 30 minutes before the drill: within the policy's 2 h RPO, so the drill passes.
    version = BackupVersionFactory(workload=workload, created_at=started - timedelta(minutes=30))
    drill = RestoreDrillFactory(version=version, started_at=started)
    assert drill.passed, drill.failure_reasons
    return drill.policy


def record_passed_drill(policy):
    version = BackupVersionFactory(workload=policy.workload, step=2000)
    return RestoreDrillFactory(version=version, policy=policy)
