"""Pull: telemetry fetched on a schedule rather than sent.

``sources`` pulls a PullSource by its kind: ``scrapes`` (dcgm-exporter ``/metrics``) and
``prometheus`` (raw samples from a Prometheus API) store through the ingest pipeline,
sharing ``base`` (HTTP, expected failures, the run they record); ``tsdb`` stores hourly
aggregates a TSDB computes, with the queries of ``promql``; ``connect`` probes a
Prometheus and sets a fleet up; ``tasks`` holds their Celery tasks.
"""
