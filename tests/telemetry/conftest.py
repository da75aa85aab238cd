"""Fixtures of the telemetry tests: the real VictoriaMetrics of the TSDB pull tests, and
a dcgm-exporter answering the recorded scrapes (``scrape_server``)."""

from tests.telemetry.test_pull import scrape_server  # noqa: F401, E402 - a fixture
from tests.telemetry.tsdb_servers import victoria_metrics  # noqa: F401 - a fixture
