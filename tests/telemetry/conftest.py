"""Fixtures of the telemetry tests: the real VictoriaMetrics of the TSDB pull tests."""

from tests.telemetry.tsdb_servers import victoria_metrics  # noqa: F401 - a fixture
