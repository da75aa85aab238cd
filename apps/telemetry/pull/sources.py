"""Pulling GPU telemetry on a schedule: two pull modes run by Celery beat.

- ``pull_dcgm_exporter``: HTTP GET a dcgm-exporter ``/metrics`` endpoint, parse it with
  ``parse_dcgm`` stamped at the pull time, import it. Beat pulls these sources in batches
  (``pull_dcgm_exporters``: the scrapes of up to SCRAPE_BATCH_SIZE nodes, fetched in
  parallel, stored in one transaction with one COPY, one run per source).
- ``pull_prometheus``: ask a Prometheus server's ``/api/v1/query_range`` for the DCGM
  metrics over the range since the last pull, turn the series into one row per device and
  instant, import them. Evaluation instants sit on a grid of ``step_seconds`` counted from
  the epoch, so an overlapping or repeated pull asks for the very same instants and the
  (device, timestamp) key stores nothing twice.

Both record an ImportRun (history page) and the outcome on the PullSource, keep the good
rows of a sample with an odd line (a live endpoint should not lose a whole scrape to one
bad value; the rejected ones are listed on the run), leave the pool-hours they touched
queued for the next ``telemetry.rollup_pending`` beat tick (PendingRollup: one rollup per
pool-hour a minute, not one per scrape), and never raise for what a network or a server can be
expected to do: unreachable, timing out, answering an HTTP error or something that is not
telemetry.

HTTP is the standard library's: two GETs need no extra dependency. Prometheus API
reference: https://prometheus.io/docs/prometheus/latest/querying/api/ ("Range queries",
"Format overview", "Expression query result formats").
"""

import logging
from datetime import datetime

from apps.telemetry.models import ImportRun, PullSource
from apps.telemetry.pull.prometheus import pull_prometheus
from apps.telemetry.pull.scrapes import pull_dcgm_exporter

logger = logging.getLogger(__name__)


def pull_source(source: PullSource, *, now: datetime | None = None) -> ImportRun:
    """Pull ``source`` by its kind (the raw-sample kinds; hourly aggregates are
    apps/telemetry/pull/tsdb.py's)."""
    if source.kind == PullSource.Kind.PROMETHEUS:
        return pull_prometheus(source, now=now)
    return pull_dcgm_exporter(source, now=now)
