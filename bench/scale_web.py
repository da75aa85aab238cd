"""100 concurrent users on the Overview and the reports, under gunicorn as deployed.

Starts gunicorn exactly as docker-compose.yml's ``web`` service runs it (its command,
with the port replaced by a free one on 127.0.0.1), under the production settings
(a secret made for the run, DEBUG off, whitenoise serving the collected static files,
Redis as the cache), against a database of its own seeded with bench/dashboard.py's
fleet (1,000 pools and a year of hourly rollups by default). It signs in ``--users``
users through the sign-in form, then drives that many concurrent connections with
``wrk`` (Debian's package), each request carrying one of the users' session cookies in
turn, against each page for ``--duration`` seconds, the pages alternating round by
round:

- the bare view (bench/web_urls.py): the base template for a signed-in user, through
  every middleware: the baseline;
- the Overview and the reports (30 days by pool, 1 year by pool), their figures cached
  as after a warm-up (apps/reports/warming.py computes them in this process, as the
  worker would).

It prints throughput, p50 and p95 of each, the CPU the server spent per request
(gunicorn's processes and the PostgreSQL backends of the benchmark's database, from
/proc: what a page costs whatever else the machine runs) and each page's throughput ÷
the bare view's, round by round (the median of the rounds). Aim: ≥ 0.5× for every page.

``--config "LABEL=gunicorn options"`` (repeatable) measures other gunicorn options in
the same run, after the compose file's, e.g. the former 2 sync workers:
``--config "sync, 2 workers=--worker-class=sync --workers=2 --threads=1"`` (each option
replaces the compose file's of that name); a label ending in "(info)" has no aim.

    .venv/bin/python bench/scale_web.py                    # fills ~3-5 min the first time
    .venv/bin/python bench/scale_web.py --reuse            # keeps the rows of the last fill
    .venv/bin/python bench/scale_web.py --reuse --duration 10 --rounds 1   # a quick run

Requests go over plain HTTP with ``X-Forwarded-Proto: https``, as from the TLS proxy
the deployment puts in front (README). Exits 1 when an aim is missed.
"""

import argparse
import http.client
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

import dashboard as dashboard_bench  # noqa: E402 (bench/dashboard.py: the fleet's fill)

PASSWORD = "bench-web-password"  # noqa: S105 (users of the benchmark's own database)
AIM_RATIO = 0.5
CACHE_KEY_PREFIX = "gpufleet-bench-web"
FORWARDED = {"X-Forwarded-Proto": "https"}

WRK_SCRIPT = r"""
-- Each request carries the next user's session cookie. No response() hook: wrk would
-- copy every body into Lua, on the cores the server needs; a status other than 2xx/3xx
-- counts in summary.errors.status, and each page is checked before and after its run
-- (a session signed out would answer 302).
function init(args)
  cookies = {}
  for line in io.lines(args[1]) do table.insert(cookies, line) end
  position = math.random(#cookies)
end
function request()
  position = position % #cookies + 1
  return wrk.format(nil, nil, {Cookie = "sessionid=" .. cookies[position],
                               ["X-Forwarded-Proto"] = "https"})
end
function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "not_ok": %d, "socket_errors": %d, ' ..
    '"p50_us": %d, "p95_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, errors.status,
    errors.connect + errors.read + errors.write + errors.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
"""


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--users", type=int, default=100, help="users, and connections")
    parser.add_argument("--duration", type=int, default=20, help="seconds per page and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="LABEL=OPTIONS",
        help="other gunicorn options to measure after the compose file's",
    )
    parser.add_argument("--skip-compose", action="store_true", help="only the --config runs")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the rows a previous run with the same sizes wrote",
    )
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpufleet_bench_web"
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/8")
    )
    return parser.parse_args()


def compose_web_command() -> list[str]:
    """The ``web`` service's command in docker-compose.yml, as a list."""
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    command = compose["services"]["web"]["command"]
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def with_port(command: list[str], port: int) -> list[str]:
    """``command`` bound to 127.0.0.1:``port``, its access log kept (to a file)."""
    bound, skip = [], False
    for part in command:
        if skip:
            skip = False
            continue
        if part in ("--bind", "-b"):
            skip = True
            continue
        if part.startswith("--bind="):
            continue
        bound.append(part)
    return [*bound, f"--bind=127.0.0.1:{port}"]


def with_options(command: list[str], options: list[str]) -> list[str]:
    """``command`` with ``options`` (``--name=value`` each) in place of its own."""
    names = {option.partition("=")[0] for option in options}
    kept = [part for part in command if part.partition("=")[0] not in names]
    return [*kept, *options]


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, from /proc (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def server_cpu_seconds(master_pid: int, database: str) -> float:
    """CPU used so far by gunicorn (master and workers) and by the PostgreSQL backends
    connected to the benchmark's database: what serving the pages costs, whatever else
    runs on the machine (Redis, shared with other programs, is left out)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [database],
        )
        backends = [row[0] for row in cursor.fetchall()]
    pids = [master_pid, *_children(master_pid), *backends]
    return sum(_cpu_seconds(pid) for pid in pids)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_environment(arguments, static_root: str) -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not re.match(r"^(DJANGO_|SECRET_KEY|DEBUG|ALLOWED_HOSTS|SECURE_|CONN_MAX_AGE)", key)
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="bench.web_settings",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        DATABASE_URL=arguments.database_url,
        REDIS_URL=arguments.redis_url,
        CELERY_BROKER_URL=arguments.redis_url,
        STATIC_ROOT=static_root,
        CACHE_KEY_PREFIX=CACHE_KEY_PREFIX,
        PYTHONPATH=str(REPO_ROOT),
    )
    return environment


def start_server(command, environment, log_path) -> subprocess.Popen:
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent))
    argv = [gunicorn or command[0], *command[1:]]
    log = open(log_path, "ab")  # noqa: SIM115 (closed with the process, in stop_server)
    process = subprocess.Popen(  # noqa: S603 (the compose file's own command)
        argv, cwd=REPO_ROOT, env=environment, stdout=log, stderr=log, start_new_session=True
    )
    process.log = log
    return process


def stop_server(process) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    process.log.close()


def request(port, method, path, *, headers=None, body=None, timeout=120):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers={**FORWARDED, **(headers or {})})
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def cookies_of(headers) -> dict[str, str]:
    found = {}
    for name, value in headers:
        if name.lower() == "set-cookie":
            key, _, rest = value.partition("=")
            found[key.strip()] = rest.split(";", 1)[0]
    return found


def wait_until_serving(port, process, timeout_seconds=90) -> None:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited with {process.returncode}; see its log")
        try:
            status, _, _ = request(port, "GET", "/login/", timeout=5)
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("gunicorn did not answer /login/ within 90 s")


def sign_in(port, username) -> str:
    """The session cookie of ``username``, signed in through the sign-in form."""
    status, headers, _ = request(port, "GET", "/login/")
    csrf = cookies_of(headers)["csrftoken"]
    body = urllib.parse.urlencode(
        {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf}
    )
    status, headers, _ = request(
        port,
        "POST",
        "/login/",
        body=body,
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf}",
            "Origin": f"https://127.0.0.1:{port}",
            "Referer": f"https://127.0.0.1:{port}/login/",
        },
    )
    session = cookies_of(headers).get("sessionid")
    if status != 302 or not session:
        raise SystemExit(f"signing {username} in answered {status}")
    return session


def make_users(count) -> list[str]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    User = get_user_model()
    names = [f"bench-web-{index:03d}" for index in range(count)]
    password = make_password(PASSWORD)  # one hash for all: each sign-in still checks it
    existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    User.objects.bulk_create(
        User(username=name, password=password) for name in names if name not in existing
    )
    User.objects.filter(username__in=names).update(password=password, is_active=True)
    return names


def pages() -> dict[str, str]:
    year_ago = (datetime.now(UTC) - timedelta(days=364)).date().isoformat()
    return {
        "bare view (base template)": "/bench/bare/",
        "overview, cached": "/",
        "reports, 30 days by pool, cached": "/reports/?group_by=pool",
        "reports, 1 year by pool, cached": f"/reports/?start={year_ago}&group_by=pool",
    }


# What each page must hold to count as itself (not a progress bar or an error page).
MARKERS = {
    "/": 'id="idle-ranking"',
    "/reports/": 'id="report-rows"',
    "/bench/bare/": "</html>",
}


def warm(path) -> None:
    """The page's figures into the cache, as the worker's warm-up computes them."""
    from django.http import QueryDict

    from apps.reports.warming import warm_view

    parsed = urllib.parse.urlsplit(path)
    if parsed.path == "/":
        warm_view("overview")
    elif parsed.path == "/reports/":
        query = QueryDict(parsed.query).urlencode()
        assert warm_view("report", query), path


def check_page(port, path, session) -> float:
    started = time.perf_counter()
    status, _, body = request(port, "GET", path, headers={"Cookie": f"sessionid={session}"})
    seconds = time.perf_counter() - started
    marker = MARKERS[urllib.parse.urlsplit(path).path]
    if status != 200 or marker.encode() not in body:
        raise SystemExit(f"{path} answered {status} without {marker!r}")
    if b'id="report-progress-step"' in body:
        raise SystemExit(f"{path} is being computed by a worker, not served from the cache")
    return seconds


def run_wrk(port, path, cookie_file, script_file, connections, duration) -> dict:
    command = [
        "wrk",
        "--threads=2",
        f"--connections={connections}",
        f"--duration={duration}s",
        "--timeout=60s",
        f"--script={script_file}",
        f"http://127.0.0.1:{port}{path}",
        "--",
        cookie_file,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def measure(label, command, arguments, environment, workdir, sessions) -> dict:
    port = free_port()
    process = start_server(with_port(command, port), environment, workdir / "gunicorn.log")
    results = {name: [] for name in pages()}
    try:
        wait_until_serving(port, process)
        if not sessions:
            print(f"signing {len(arguments.usernames)} users in …", file=sys.stderr)
            with ThreadPoolExecutor(max_workers=4) as pool:
                sessions.extend(pool.map(lambda name: sign_in(port, name), arguments.usernames))
        cookie_file = workdir / "sessions.txt"
        cookie_file.write_text("\n".join(sessions) + "\n")
        script_file = workdir / "cookies.lua"
        script_file.write_text(WRK_SCRIPT)
        for round_ in range(arguments.rounds):
            for name, path in pages().items():
                warm(path)
                first = check_page(port, path, sessions[0])
                hour = datetime.now(UTC).hour
                print(
                    f"{label}, round {round_ + 1}: {name} (first request {first * 1000:.0f} ms)",
                    file=sys.stderr,
                )
                database = arguments.database_url.rsplit("/", 1)[1]
                cpu_before = server_cpu_seconds(process.pid, database)
                outcome = run_wrk(
                    port, path, cookie_file, script_file, arguments.users, arguments.duration
                )
                outcome["cpu_seconds"] = server_cpu_seconds(process.pid, database) - cpu_before
                # Cached figures are keyed by the UTC hour: a round that crosses it pays
                # for the figures once in the requests, and says so.
                outcome["crossed_hour"] = datetime.now(UTC).hour != hour
                check_page(port, path, sessions[-1])
                results[name].append(outcome)
    finally:
        stop_server(process)
    return results


def summarise(results) -> dict:
    """Per page: throughput over all rounds, the medians of each round's p50 and p95,
    the server's CPU per request, and the ratios to the bare view taken round by round
    (the two ran a minute apart, under the same load), their median."""
    bare_runs = results["bare view (base template)"]
    summary = {}
    for name, runs in results.items():
        requests = sum(run["requests"] for run in runs)
        seconds = sum(run["duration_us"] for run in runs) / 1e6
        ratios = [
            (run["requests"] / run["duration_us"]) / (bare["requests"] / bare["duration_us"])
            for run, bare in zip(runs, bare_runs, strict=True)
            if bare["requests"]
        ]
        cpu_ms = 1000 * sum(run["cpu_seconds"] for run in runs) / requests if requests else 0.0
        summary[name] = {
            "requests": requests,
            "per_second": requests / seconds if seconds else 0.0,
            "ratio": statistics.median(ratios) if ratios else 0.0,
            "ratios": ratios,
            "cpu_ms": cpu_ms,
            "p50_ms": statistics.median(run["p50_us"] for run in runs) / 1000,
            "p95_ms": statistics.median(run["p95_us"] for run in runs) / 1000,
            "not_ok": sum(run["not_ok"] + run["socket_errors"] for run in runs),
            "crossed_hour": any(run["crossed_hour"] for run in runs),
        }
    return summary


def main():
    arguments = parse_arguments()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install wrk")
    os.environ["REDIS_URL"] = arguments.redis_url
    # Keys of their own: a test run on the same Redis database bumps the reports version
    # and forgets the recent views under the default prefix.
    os.environ["CACHE_KEY_PREFIX"] = CACHE_KEY_PREFIX
    # No broker in this process: it fills and warms, it hands nothing to a worker.
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    workdir = Path(tempfile.mkdtemp(prefix="gpufleet-scale-web-"))
    static_root = str(workdir / "static")
    os.environ["STATIC_ROOT"] = static_root
    dashboard_bench.setup_django(arguments.database_url)
    from django.core.management import call_command

    started = time.perf_counter()
    if arguments.reuse and dashboard_bench.filled(
        arguments.pools, arguments.workloads, arguments.days
    ):
        print("reusing the previous run's rows", file=sys.stderr)
    else:
        print("filling …", file=sys.stderr)
        dashboard_bench.fill(arguments.pools, arguments.workloads, arguments.days)
    print(f"filled in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    call_command("collectstatic", "--noinput", verbosity=0)
    arguments.usernames = make_users(arguments.users)
    environment = server_environment(arguments, static_root)

    compose = compose_web_command()
    configs = [] if arguments.skip_compose else [("docker-compose.yml", compose)]
    for spec in arguments.config:
        label, _, options = spec.partition("=")
        configs.append((label, with_options(compose, shlex.split(options))))
    sessions: list[str] = []
    summaries = {}
    for label, command in configs:
        results = measure(label, command, arguments, environment, workdir, sessions)
        summaries[label] = (command, summarise(results))

    print(
        f"gpufleet web benchmark, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs: "
        f"{arguments.pools} pools, {arguments.workloads} workloads, {arguments.days} days of "
        f"hourly rollups; {arguments.users} users = {arguments.users} connections (wrk), "
        f"{arguments.rounds} × {arguments.duration} s per page, pages alternating"
    )
    missed = False
    for label, (command, summary) in summaries.items():
        print()
        print(f"{label}: {' '.join(command[:1] + command[1:])}")
        bare_cpu_ms = summary["bare view (base template)"]["cpu_ms"]
        print(
            f"{'page':36} {'requests/s':>11} {'p50 ms':>8} {'p95 ms':>8} {'CPU ms/req':>11} "
            f"{'CPU ÷ bare':>11} {'req/s ÷ bare':>13}  aim ≥ {AIM_RATIO}×"
        )
        for name, figures in summary.items():
            ratio = figures["ratio"]
            cpu_ratio = figures["cpu_ms"] / bare_cpu_ms if bare_cpu_ms else 0.0
            if name.startswith("bare"):
                verdict = ""
            elif label.endswith("info)"):
                verdict = "(info)"
            else:
                verdict = "PASS" if ratio >= AIM_RATIO and not figures["not_ok"] else "MISS"
            missed |= verdict == "MISS"
            notes = []
            if figures["not_ok"]:
                notes.append(f"{figures['not_ok']} not 200")
            if figures["crossed_hour"]:
                notes.append("crossed an hour")
            if len(figures["ratios"]) > 1 and not name.startswith("bare"):
                notes.append("rounds " + " ".join(f"{r:.2f}" for r in figures["ratios"]))
            print(
                f"{name:36} {figures['per_second']:11.1f} {figures['p50_ms']:8.0f} "
                f"{figures['p95_ms']:8.0f} {figures['cpu_ms']:11.2f} {cpu_ratio:10.2f}× "
                f"{ratio:12.2f}×  {verdict}" + (f" ({', '.join(notes)})" if notes else "")
            )
    shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
