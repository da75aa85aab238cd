"""gunicorn's settings for the web service (docker-compose.yml and the Dockerfile run
``gunicorn config.wsgi:application --config=python:config.gunicorn``).

Threaded workers (``gthread``), one process more than the cores the container may use,
four threads each. A request spends a good part of its time waiting on PostgreSQL and
Redis, when its process's core (the GIL) can serve another thread; the spare process
keeps the cores busy while one is held by a page computed in the request (an uncached
report: seconds). On 2 cores that is 3 × 4 = 12 requests in flight, and 12 database
connections kept open (``CONN_MAX_AGE``); bench/scale_web.py measures the throughput.

``WEB_WORKERS`` and ``WEB_THREADS`` override the counts; ``GUNICORN_CMD_ARGS`` any other
option.
"""

import os


def _cores() -> int:
    # The CPUs this process may run on (a container's cpuset), not the host's count.
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS") or _cores() + 1)
threads = int(os.environ.get("WEB_THREADS") or 4)
# Browsers keep their connection between the page and its fragments (htmx, the explain
# drawer); a proxy in front keeps its own.
keepalive = 5


def on_starting(server):
    """Several worker processes each count their own requests: prometheus_client's
    multiprocess mode adds them up at a scrape of /metrics (apps/alerts/metrics.py),
    from files in a directory made afresh at each start."""
    if server.cfg.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        import tempfile

        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="gpufleet-metrics-")


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
