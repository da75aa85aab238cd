"""``/metrics``: django-prometheus's request, latency and database metrics, then
gpufleet's own gauges, computed at each scrape in a dozen SQL aggregates.

Every pool series carries its pool's ``cluster`` (slug) beside ``pool``, and every pull
source series its source's: a query by ``pool`` alone reads them as before, and
``sum by (cluster)`` adds a cluster's pools up.

- ``gpufleet_pool_utilisation_ratio{pool,cluster}``: busy ÷ measured GPU-hours over the last
  24 h, the report's figure (no series for a pool without telemetry in those hours);
- ``gpufleet_pool_idle_cost_usd{pool,cluster,window}``: idle cost over the last 24 h, 7 d and
  30 d, as the Reports page and the pool list compute it;
- ``gpufleet_pool_idle_cost{pool,cluster,window,currency}``: the same in the reporting currency
  (``REPORTING_CURRENCY``), each month's hours at that month's exchange rates; an hour
  whose rate is missing is left out of both (never converted at 1);
- ``gpufleet_drills_overdue`` and ``gpufleet_drills_failing``: backup policies whose
  restore drill is overdue, or whose latest drill failed;
- ``gpufleet_telemetry_lag_seconds{source,cluster}``: per enabled pull source, the age of the
  newest data it delivered (Prometheus and TSDB sources: where their pull has reached;
  dcgm-exporter: the last pull), and ``gpufleet_telemetry_source_up{source,cluster}``: 0 when
  its last pull failed;
- ``gpufleet_alerts_firing{kind}``: firing alerts per rule kind, 0 for the quiet ones;
- ``gpufleet_team_budget_used_ratio{team}``: per team with a budget, spent this month ÷
  the budget (the showback's spend; above 1 when over budget, never clamped), both in
  the reporting currency; none for a budget whose exchange rate is missing;
- ``gpufleet_worker_queue_depth{queue}``: tasks waiting in the Celery queue on the
  broker (Redis ``LLEN`` over its priority lists) and, as ``queue="outbox"``, tasks
  kept in the database for a broker that was unreachable.

Each family is a function registered with ``@family``: an app that adds figures registers
its function, so no placeholder series is ever emitted (no team budget: no budget series).

Access (``access_status``): ``Authorization: Bearer METRICS_TOKEN``, or a peer address in
``METRICS_ALLOWED_ADDRESSES`` (CIDRs; the direct peer, so behind a proxy use the token).
With neither configured the endpoint answers 404, as if it did not exist: a fresh
install does not publish its fleet's figures. A wrong or missing token answers 401, an
address outside the list (and no token configured) 403.
"""

import hmac
import ipaddress
import logging
import os
from collections.abc import Callable, Iterable
from datetime import datetime

import prometheus_client
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import CollectorRegistry

from apps.accounts.scope import EVERYTHING
from apps.alerts import registry as rule_registry
from apps.alerts.models import Alert
from apps.backups.services import overdue_and_failing_summary
from apps.core.models import OutboxTask
from apps.currencies.codes import reporting_currency
from apps.pools.models import Pool
from apps.reports.cost import costmodel
from apps.reports.cost.pool_usage import UsageTotals, pool_usage_totals
from apps.reports.span import Span
from apps.showback.selectors import budget_burndowns, budgets_in_scope
from apps.telemetry.models import PullSource
from config.celery_app import app as celery_app

logger = logging.getLogger(__name__)

# Windows in hours: each is the span of that many hour-slots ending with the current
# one (Span.last_hours).
IDLE_COST_WINDOWS = (
    ("24h", 24),
    ("7d", 7 * 24),
    ("30d", 30 * 24),
)
UTILISATION_WINDOW_HOURS = 24
# What kombu's Redis transport appends to a queue's name for its priority lists.
REDIS_PRIORITY_SEPARATOR = "\x06\x16"
REDIS_PRIORITY_STEPS = (0, 3, 6, 9)

FAMILIES: list[Callable[[datetime], Iterable[Metric]]] = []


def family(function):
    """Register ``function(now) -> metric families`` for every scrape."""
    FAMILIES.append(function)
    return function


class GpufleetCollector:
    """prometheus_client's custom collector over ``FAMILIES``."""

    def collect(self):
        now = timezone.now()
        for function in FAMILIES:
            yield from function(now)


@family
def pool_figures(now) -> Iterable[Metric]:
    pools = list(
        Pool.objects.active()
        .in_service(now)
        .select_related("cluster")
        .order_by("slug")
        .only("pk", "slug", "cluster__slug")
    )
    ids = [pool.pk for pool in pools]
    utilisation = GaugeMetricFamily(
        "gpufleet_pool_utilisation_ratio",
        "Busy ÷ measured GPU-hours of the pool over the last 24 h (hours with telemetry).",
        labels=["pool", "cluster"],
    )
    day = pool_usage_totals(Span.last_hours(now, UTILISATION_WINDOW_HOURS), ids)
    for pool in pools:
        usage = day.get(pool.pk)
        if usage and usage.measured_capacity_gpu_hours > 0:
            utilisation.add_metric(
                [pool.slug, pool.cluster.slug],
                usage.busy_gpu_hours / usage.measured_capacity_gpu_hours,
            )
    yield utilisation
    idle = GaugeMetricFamily(
        "gpufleet_pool_idle_cost_usd",
        "Idle cost of the pool over the window, USD: measured cost × (1 − busy ÷ measured).",
        labels=["pool", "cluster", "window"],
    )
    reporting = GaugeMetricFamily(
        "gpufleet_pool_idle_cost",
        "Idle cost of the pool over the window in the reporting currency (label currency).",
        labels=["pool", "cluster", "window", "currency"],
    )
    currency = reporting_currency()
    for window, length in IDLE_COST_WINDOWS:
        totals = (
            day
            if length == UTILISATION_WINDOW_HOURS
            else pool_usage_totals(Span.last_hours(now, length), ids)
        )
        for pool in pools:
            usage = totals.get(pool.pk, UsageTotals())
            for family_, labels, cost in (
                (idle, [pool.slug, pool.cluster.slug, window], usage.measured_cost_usd),
                (
                    reporting,
                    [pool.slug, pool.cluster.slug, window, currency],
                    usage.measured_cost,
                ),
            ):
                family_.add_metric(
                    labels,
                    # The exposition format's samples are floats.
                    float(
                        costmodel.idle_cost_usd(
                            cost, usage.busy_gpu_hours, usage.measured_capacity_gpu_hours
                        )
                    ),
                )
    yield idle
    yield reporting


@family
def drills(now) -> Iterable[Metric]:
    summary = overdue_and_failing_summary(now)
    yield GaugeMetricFamily(
        "gpufleet_drills_overdue",
        "Backup policies whose restore drill is overdue.",
        value=summary["overdue"],
    )
    yield GaugeMetricFamily(
        "gpufleet_drills_failing",
        "Backup policies whose latest restore drill failed.",
        value=summary["failing"],
    )


@family
def telemetry_lag(now) -> Iterable[Metric]:
    lag = GaugeMetricFamily(
        "gpufleet_telemetry_lag_seconds",
        "Age of the newest data the pull source delivered, seconds.",
        labels=["source", "cluster"],
    )
    up = GaugeMetricFamily(
        "gpufleet_telemetry_source_up",
        "1 when the pull source's last pull succeeded, 0 when it failed.",
        labels=["source", "cluster"],
    )
    sources = PullSource.objects.filter(enabled=True).select_related("cluster").order_by("slug")
    fields = ("slug", "kind", "pulled_until", "last_pulled_at", "last_status", "cluster__slug")
    for source in sources.only(*fields):
        newest = source.pulled_until if source.kind != PullSource.Kind.DCGM_EXPORTER else None
        newest = newest or source.last_pulled_at
        if newest is not None:
            lag.add_metric(
                [source.slug, source.cluster.slug], max(0.0, (now - newest).total_seconds())
            )
        if source.last_status:
            up.add_metric(
                [source.slug, source.cluster.slug], 0 if source.last_status == "error" else 1
            )
    yield lag
    yield up


@family
def alerts_firing(now) -> Iterable[Metric]:
    counts = dict(
        Alert.objects.filter(status=Alert.Status.FIRING)
        .values("kind")
        .annotate(firing=Count("pk"))
        .values_list("kind", "firing")
    )
    firing = GaugeMetricFamily(
        "gpufleet_alerts_firing", "Firing alerts, by rule kind.", labels=["kind"]
    )
    for kind, _label in rule_registry.KINDS:
        firing.add_metric([kind], counts.get(kind, 0))
    yield firing


@family
def team_budgets(now) -> Iterable[Metric]:
    budgets = budgets_in_scope(EVERYTHING).filter(team__isnull=False).order_by("team__slug")
    used = GaugeMetricFamily(
        "gpufleet_team_budget_used_ratio",
        "Spent this month ÷ the team's monthly budget (showback spend; above 1: over budget).",
        labels=["team"],
    )
    for item in budget_burndowns(budgets, now):
        # Both in the reporting currency; a budget without the rate to convert its
        # amount has no ratio, and no sample rather than a wrong one.
        if item.figures.amount is not None:
            used.add_metric([item.budget.team.slug], item.figures.spent / item.figures.amount)
    yield used


@family
def queue_depth(now) -> Iterable[Metric]:
    depth = GaugeMetricFamily(
        "gpufleet_worker_queue_depth",
        "Tasks waiting for a worker: on the broker's queue, and kept in the outbox while "
        "the broker was unreachable.",
        labels=["queue"],
    )
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    waiting = broker_queue_length(queue)
    if waiting is not None:
        depth.add_metric([queue], waiting)
    depth.add_metric(["outbox"], OutboxTask.objects.filter(enqueued_at__isnull=True).count())
    yield depth


def broker_queue_length(queue: str) -> int | None:
    """Messages waiting in ``queue`` on a Redis broker, or None (no Redis broker, or it
    did not answer within its short timeouts)."""
    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.CELERY_BROKER_URL.startswith(
        ("redis://", "rediss://")
    ):
        return None
    names = [queue] + [
        f"{queue}{REDIS_PRIORITY_SEPARATOR}{step}" for step in REDIS_PRIORITY_STEPS[1:]
    ]
    try:
        with celery_app.connection_for_read() as connection:
            client = connection.default_channel.client
            with client.pipeline() as pipeline:
                for name in names:
                    pipeline.llen(name)
                return sum(pipeline.execute())
    except Exception as error:  # noqa: BLE001 - a scrape reports what it can
        logger.warning("queue depth not read from the broker: %s", error)
        return None


# --- The endpoint -----------------------------------------------------------------------


def allowed_networks() -> list:
    try:
        return [
            ipaddress.ip_network(entry, strict=False)
            for entry in settings.METRICS_ALLOWED_ADDRESSES
        ]
    except ValueError as error:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_ADDRESSES: {error}") from None


def access_status(request) -> int:
    """200 when the request may read the metrics, else the status to answer."""
    token = settings.METRICS_TOKEN
    networks = allowed_networks()
    if not token and not networks:
        return 404
    if token:
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), token.encode()
        ):
            return 200
    if networks:
        try:
            address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
        except ValueError:
            address = None
        if address is not None and any(address in network for network in networks):
            return 200
    return 401 if token else 403


def exposition() -> bytes:
    """Django's metrics (every process's, in gunicorn's multiprocess mode) and gpufleet's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        django_registry = CollectorRegistry()
        MultiProcessCollector(django_registry)
    else:
        django_registry = prometheus_client.REGISTRY
    own = CollectorRegistry(auto_describe=False)
    own.register(GpufleetCollector())
    return prometheus_client.generate_latest(django_registry) + prometheus_client.generate_latest(
        own
    )
