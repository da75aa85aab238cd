"""``manage.py run``: all of gpufleet on one machine, as production runs it.

The web server (gunicorn; Django's autoreloading runserver with ``--dev``), a Celery
worker and Celery beat run side by side under honcho, on the PostgreSQL of
``DATABASE_URL`` (the embedded one when it is unset: config/embedded.py) and the Redis of
``REDIS_URL`` (an embedded redis-server started here when it is unset). Before they start,
the database is migrated, static files collected and the demo fleet refreshed. Ctrl-C
(or SIGTERM) stops them all, then the servers this command started. It lives beside
``seed_demo``, the top layer of the apps: it loads the demo and names its users.
"""

import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from apps.demo.management.commands.seed_demo import DEMO_PASSWORD, DEMO_USERS
from config.embedded import environment_for_children, start_redis, stop_redis

READY_TIMEOUT_SECONDS = 120


class Command(BaseCommand):
    help = (
        "Runs gpufleet: migrates, loads the demo, then serves the web pages with a Celery "
        "worker and beat until Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--without-demo",
            action="store_true",
            help="Start with your own fleet only: the demo is not loaded or refreshed.",
        )
        parser.add_argument(
            "--dev",
            action="store_true",
            help="Django's runserver with DEBUG on and code reloading, for development.",
        )

    def handle(self, *args, host, port, without_demo, dev, **options):
        from honcho.manager import Manager

        self.started = time.monotonic()
        self._say_where_earlier_data_is()
        redis_process = None
        redis_dir = settings.VAR_DIR / "redis"
        redis_url = settings.REDIS_URL
        if not redis_url:
            redis_process, redis_url = start_redis(redis_dir)
        try:
            self._prepare(without_demo=without_demo, collect_static=not dev)
            environment = environment_for_children(settings.DATABASE_URL, redis_url)
            environment["DEBUG"] = "true" if dev else "false"
            environment["PYTHONUNBUFFERED"] = "1"
            environment.setdefault("SITE_URL", f"http://{host}:{port}")
            manager = Manager()
            for name, command in self._processes(host, port, dev=dev).items():
                manager.add_process(name, command, env=environment, cwd=str(settings.BASE_DIR))
            threading.Thread(
                target=self._announce_when_ready,
                args=(host, port, without_demo),
                daemon=True,
            ).start()
            manager.loop()
        finally:
            if redis_process is not None:
                stop_redis(redis_process, redis_dir)
        sys.exit(manager.returncode or 0)

    def _say_where_earlier_data_is(self):
        """An install from before PostgreSQL kept its data in a file under var/: it is
        left as it is, and the one way to bring it over is said."""
        for earlier in sorted(Path(settings.VAR_DIR).glob("*.sqlite3")):
            self.stdout.write(
                self.style.WARNING(
                    f"{earlier} holds the data of an earlier gpufleet (SQLite) and is kept as "
                    "it is; to bring its objects here, run `manage.py dumpdata "
                    "--natural-foreign --natural-primary -e contenttypes -e auth.permission "
                    "-o fleet.json` with DATABASE_URL=sqlite:///" + str(earlier) + " in that "
                    "earlier checkout, then `manage.py loaddata fleet.json` here, with "
                    "--without-demo."
                )
            )

    def _prepare(self, *, without_demo: bool, collect_static: bool) -> None:
        started = time.monotonic()
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write(f"Database ready ({time.monotonic() - started:.1f} s).")
        if collect_static:
            call_command("collectstatic", interactive=False, verbosity=0)
        if not without_demo:
            call_command("seed_demo")

    def _processes(self, host: str, port: int, *, dev: bool) -> dict[str, str]:
        python = sys.executable
        schedule = settings.VAR_DIR / "celerybeat-schedule"
        if dev:
            web = f"{python} manage.py runserver {host}:{port}"
        else:
            web = (
                f"{python} -m gunicorn config.wsgi:application --config python:config.gunicorn "
                f"--bind {host}:{port} --access-logfile -"
            )
        return {
            "web": web,
            # Warnings and failures only: beat sends a task every 15 s, and a line for each
            # would bury the web server's.
            "worker": f"{python} -m celery -A config.celery_app worker --loglevel=WARNING",
            "beat": f"{python} -m celery -A config.celery_app beat --loglevel=WARNING "
            f"--schedule={schedule}",
        }

    def _demo_usernames(self) -> dict[str, str]:
        """The demo's users as they are named here: a user of one's own who holds a demo
        username keeps it, and the demo's is named apart (apps/demo/registry.py)."""
        from django.contrib.auth import get_user_model

        from apps.demo.registry import DemoRegistry

        users = DemoRegistry.load().all_of(get_user_model())
        return {key: user.get_username() for key, user in users.items()}

    def _announce_when_ready(self, host: str, port: int, without_demo: bool) -> None:
        address = f"http://{host}:{port}/"
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{address}healthz", timeout=10):  # noqa: S310
                    break
            except urllib.error.HTTPError:
                break  # it answers; /healthz says 503 until the worker's first heartbeat
            except OSError:
                time.sleep(0.5)
        else:
            self.stderr.write(f"gpufleet did not answer on {address} within 120 s.")
            return
        seconds = time.monotonic() - self.started
        lines = ["", f"  gpufleet is ready on {address} (started in {seconds:.0f} s)", ""]
        if without_demo:
            lines.append("  Sign in with a superuser of yours (manage.py createsuperuser).")
        else:
            lines.append(f"  Demo sign-ins, all with the password {DEMO_PASSWORD}:")
            usernames = self._demo_usernames()
            lines += [
                f"    {usernames.get(key, key):<13} {full_name}, {role or 'superuser'}"
                for key, full_name, role in DEMO_USERS
            ]
        lines += ["", "  Ctrl-C stops gpufleet, its worker and beat.", ""]
        self.stdout.write("\n".join(lines))
        self.stdout.flush()
