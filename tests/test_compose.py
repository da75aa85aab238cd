"""docker-compose.yml, Dockerfile and .dockerignore, checked without a Docker engine.

The compose file is parsed with PyYAML; every command a container would run is resolved
against this checkout: gunicorn's ``module:attr`` must import as a WSGI callable,
``celery -A X`` must find a Celery app, ``manage.py <cmd>`` must be a real management
command. Secrets may only appear as ``${VAR:?...}`` references, never as literals.
"""

import importlib
import inspect
import json
import re
import shlex
import urllib.request
from pathlib import Path

import pytest
import yaml
from celery import Celery
from celery.app.utils import find_app
from django.core.management import get_commands
from django.http.request import split_domain_port, validate_host

REPO_ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"

REQUIRED_SERVICES = ("postgres", "redis", "web", "worker", "beat")
APP_SERVICES = ("migrate", "web", "worker", "beat")
# The only variables compose may demand without a default: the two secrets.
REQUIRED_VARIABLES = {"SECRET_KEY", "POSTGRES_PASSWORD"}
SHARED_ENVIRONMENT = {
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "SECURE_SSL_REDIRECT",
    "TIME_ZONE",
    "DJANGO_SETTINGS_MODULE",
}
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|(^|_)KEY$")
REQUIRED_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_]\w*):?\?[^}]*\}")
# ${NAME, optionally followed by a modifier: -/:- and +/:+ supply a value, ?/:? demand one.
BRACED_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_]\w*)(?P<modifier>:?[-+?])?")
BARE_VARIABLE = re.compile(r"\$(?P<name>[A-Za-z_]\w*)")
# Paths inside the container (the image's /tmp), not temporary files on this machine.
BEAT_SCHEDULE = "/tmp/celerybeat-schedule"  # noqa: S108
GUNICORN_APP = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        pending = ""
    return instructions


def argv(command) -> list[str]:
    """A compose ``command``/healthcheck ``test`` or a Dockerfile CMD as an argument list."""
    if isinstance(command, str):
        command = command.strip()
        return json.loads(command) if command.startswith("[") else shlex.split(command)
    return [str(part) for part in command]


def environment_of(service: dict) -> dict:
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.partition("=")[::2] for item in environment)
    return {key: "" if value is None else str(value) for key, value in environment.items()}


def python_code(command: list[str]) -> str:
    """The program of a ``python -c <code>`` healthcheck."""
    assert "-c" in command, f"expected a `python -c` healthcheck, got {command}"
    return command[command.index("-c") + 1]


def option_value(command: list[str], *names: str) -> str | None:
    """The value of ``-A X``, ``--app X``, ``--app=X`` or ``-AX`` style options."""
    for index, part in enumerate(command):
        for name in names:
            if part == name and index + 1 < len(command):
                return command[index + 1]
            if name.startswith("--") and part.startswith(name + "="):
                return part[len(name) + 1 :]
            if not name.startswith("--") and part.startswith(name) and len(part) > len(name):
                return part[len(name) :]
    return None


def assert_wsgi_application(spec: str) -> None:
    module_name, _, attribute = spec.partition(":")
    application = getattr(importlib.import_module(module_name), attribute)
    assert callable(application), f"{spec} is not callable"
    parameters = [
        parameter
        for parameter in inspect.signature(application).parameters.values()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]
    assert len(parameters) == 2, f"{spec} is not a WSGI callable (environ, start_response)"


def assert_entry_point(command: list[str]) -> None:
    """The command starts something that exists in this project."""
    program = Path(command[0]).name
    if program == "gunicorn":
        specs = [part for part in command[1:] if GUNICORN_APP.match(part)]
        assert len(specs) == 1, f"no single module:attr application in {command}"
        assert_wsgi_application(specs[0])
    elif program == "celery":
        app_name = option_value(command, "-A", "--app")
        assert app_name, f"celery command without -A/--app: {command}"
        assert isinstance(find_app(app_name), Celery), f"{app_name} has no Celery app"
    elif re.fullmatch(r"python(3(\.\d+)?)?", program) and command[1:2] == ["manage.py"]:
        assert (REPO_ROOT / "manage.py").is_file()
        assert len(command) > 2, "manage.py without a command"
        assert command[2] in get_commands(), f"{command[2]} is not a management command"
    else:
        pytest.fail(f"unrecognised entry point: {command}")


def run_healthcheck_code(code: str, monkeypatch, allowed_hosts: str):
    """Run a ``python -c`` HTTP healthcheck with urlopen captured; return the Request."""
    requests = []

    def fake_urlopen(request, *args, **kwargs):
        requests.append(request)

    monkeypatch.setenv("ALLOWED_HOSTS", allowed_hosts)
    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    exec(compile(code, "<healthcheck>", "exec"), {"__name__": "__main__"})  # noqa: S102 - our own file's code
    assert len(requests) == 1, "the healthcheck should make exactly one request"
    return requests[0]


# --- compose: services, healthchecks, volumes -------------------------------------------


@pytest.mark.parametrize("name", REQUIRED_SERVICES)
def test_required_service_exists_with_a_healthcheck(services, name):
    assert name in services, f"docker-compose.yml has no {name!r} service"
    healthcheck = services[name].get("healthcheck")
    assert healthcheck, f"{name} has no healthcheck"
    assert not healthcheck.get("disable"), f"{name} disables its healthcheck"
    test = argv(healthcheck["test"])
    assert test and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, test


@pytest.mark.parametrize("name", ["worker", "beat"])
def test_worker_and_beat_do_not_inherit_the_web_healthcheck(services, name):
    # The image's HEALTHCHECK probes gunicorn on :8000, which these containers never run.
    test = " ".join(argv(services[name]["healthcheck"]["test"]))
    assert "/healthz" not in test
    assert ":8000" not in test


def test_postgres_data_is_on_a_declared_named_volume(compose, services):
    mounts = {}
    for volume in services["postgres"].get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type", "volume") == "volume":
                mounts[volume["target"]] = volume.get("source")
        else:
            source, _, target = volume.partition(":")
            mounts[target.split(":")[0]] = source
    source = mounts.get("/var/lib/postgresql/data")
    assert source, "postgres keeps /var/lib/postgresql/data in the container layer"
    assert not source.startswith(("/", ".", "~")), f"{source} is a bind mount, not a volume"
    assert source in (compose.get("volumes") or {}), f"volume {source} is not declared"


def test_only_web_publishes_a_port(services):
    assert [str(port) for port in services["web"].get("ports", [])] == ["8000:8000"]
    for name in ("postgres", "redis", "migrate", "worker", "beat"):
        assert not services[name].get("ports"), f"{name} should not be reachable from the host"


def test_dependencies_wait_for_health_and_migrations(services):
    def conditions(name):
        depends_on = services[name].get("depends_on") or {}
        assert isinstance(depends_on, dict), f"{name}: depends_on needs conditions"
        return {service: spec.get("condition") for service, spec in depends_on.items()}

    assert conditions("migrate")["postgres"] == "service_healthy"
    for name in ("web", "worker", "beat"):
        waits_for = conditions(name)
        assert waits_for.get("migrate") == "service_completed_successfully", name
        assert waits_for.get("redis") == "service_healthy", name


def test_migrate_is_one_shot(services):
    # restart: always/unless-stopped would rerun a successful migrate forever.
    assert services["migrate"].get("restart", "no") in ("no", False, "on-failure")


# --- compose: the app image and its commands --------------------------------------------


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_service_builds_from_this_directory(services, name):
    service = services[name]
    assert "image" not in service, f"{name} must build the app, not pull {service['image']}"
    build = service.get("build")
    context = build.get("context") if isinstance(build, dict) else build
    assert context in (".", "./"), f"{name} builds from {context!r}, not ."
    if isinstance(build, dict):
        assert build.get("dockerfile", "Dockerfile") == "Dockerfile"


@pytest.mark.parametrize(
    ("name", "role"),
    [("migrate", "migrate"), ("web", "gunicorn"), ("worker", "worker"), ("beat", "beat")],
)
def test_app_service_command_is_a_real_entry_point(services, name, role):
    command = argv(services[name]["command"])
    assert role in command, f"{name} does not run {role}: {command}"
    assert_entry_point(command)


def test_worker_healthcheck_pings_its_own_node(services):
    test = argv(services["worker"]["healthcheck"]["test"])
    assert test[0] == "CMD-SHELL", "the worker's node name needs the shell's $HOSTNAME"
    command = shlex.split(test[1])
    assert command[command.index("inspect") + 1] == "ping"
    assert option_value(command, "-d", "--destination") == "celery@$$HOSTNAME"
    assert_entry_point(command)


def test_beat_schedule_file_is_under_tmp(services):
    command = argv(services["beat"]["command"])
    schedule = option_value(command, "-s", "--schedule")
    assert schedule == BEAT_SCHEDULE, f"beat schedule file: {schedule}"
    assert BEAT_SCHEDULE in python_code(services["beat"]["healthcheck"]["test"])


def test_web_command_binds_port_8000(services):
    command = argv(services["web"]["command"])
    assert option_value(command, "--bind", "-b") == "0.0.0.0:8000"


@pytest.mark.parametrize(
    "allowed_hosts",
    ["localhost", "gpufleet.example.com", "gpufleet.example.com,localhost", ".example.com", "*"],
)
def test_web_healthcheck_gets_healthz_with_an_allowed_host(services, monkeypatch, allowed_hosts):
    request = run_healthcheck_code(
        python_code(argv(services["web"]["healthcheck"]["test"])), monkeypatch, allowed_hosts
    )
    assert request.full_url == "http://127.0.0.1:8000/healthz"
    # Without an explicit Host header, urllib would send the URL's 127.0.0.1:8000.
    domain, _ = split_domain_port(request.get_header("Host") or request.host)
    assert validate_host(domain, allowed_hosts.split(",")), (domain, allowed_hosts)


# --- compose: environment and secrets ---------------------------------------------------


def test_app_services_share_the_production_environment(compose, services):
    shared = {key: str(value) for key, value in compose["x-app-env"].items()}
    assert set(shared) >= SHARED_ENVIRONMENT
    assert shared["DJANGO_SETTINGS_MODULE"] == "config.settings_production"
    assert shared["REDIS_URL"] == shared["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert shared["DATABASE_URL"].endswith("@postgres:5432/gpufleet")
    for name in APP_SERVICES:
        assert environment_of(services[name]) == shared, f"{name} does not use x-app-env"


def test_variables_without_a_default_are_only_the_secrets():
    text = COMPOSE_FILE.read_text().replace("$$", "")  # $$ is a literal dollar sign
    required = {
        match["name"]
        for match in BRACED_VARIABLE.finditer(text)
        if match["modifier"] in (None, "?", ":?")
    } | {match["name"] for match in BARE_VARIABLE.finditer(text)}
    assert required <= REQUIRED_VARIABLES, f"needed without a default: {required}"
    # ...and the secrets fail loudly when missing instead of becoming empty strings.
    for name in REQUIRED_VARIABLES:
        assert re.search(r"\$\{" + name + r":\?[^}]+\}", text), f"{name} is not ${{{name}:?...}}"


def test_no_secret_literal_in_any_environment(compose, services):
    environments = {"x-app-env": environment_of({"environment": compose["x-app-env"]})}
    environments |= {name: environment_of(service) for name, service in services.items()}
    for owner, environment in environments.items():
        for key, value in environment.items():
            if SECRET_NAME.search(key):
                reference = REQUIRED_REFERENCE.fullmatch(value)
                assert reference, f"{owner}: {key} must be a ${{VAR:?...}} reference"
                assert reference["name"] in REQUIRED_VARIABLES, f"{owner}: {key}"
            credentials = re.search(r"://[^/@:]*:(?P<password>[^@]*)@", value)
            if credentials:
                assert REQUIRED_REFERENCE.fullmatch(credentials["password"]), (
                    f"{owner}: {key} embeds a literal password"
                )


# --- Dockerfile and .dockerignore -------------------------------------------------------


def instruction(dockerfile, keyword: str) -> list[str]:
    return [arguments for name, arguments in dockerfile if name == keyword]


def test_dockerfile_base_user_and_settings(dockerfile):
    assert instruction(dockerfile, "FROM") == ["python:3.11-slim"]
    users = instruction(dockerfile, "USER")
    assert users and users[-1].split(":")[0] not in ("root", "0"), "the image runs as root"
    keywords = [name for name, _ in dockerfile]
    assert keywords.index("USER") < keywords.index("CMD")
    environment = dict(
        pair.partition("=")[::2]
        for arguments in instruction(dockerfile, "ENV")
        for pair in shlex.split(arguments)
    )
    assert environment["DJANGO_SETTINGS_MODULE"] == "config.settings_production"
    assert instruction(dockerfile, "EXPOSE") == ["8000"]


def test_dockerfile_installs_the_project_and_copies_what_pip_does_not(dockerfile):
    assert any(
        re.search(r"\bpip install (\S+ )*\.(\s|$)", run) for run in instruction(dockerfile, "RUN")
    )
    copied = " ".join(instruction(dockerfile, "COPY")).split()
    for path in ("pyproject.toml", "config", "apps", "manage.py", "templates", "static"):
        assert path in copied, f"the image lacks {path}"


def test_dockerfile_secret_key_only_inline_for_collectstatic(dockerfile):
    for keyword in ("ENV", "ARG", "LABEL"):
        for arguments in instruction(dockerfile, keyword):
            assert "SECRET_KEY" not in arguments, f"{keyword} {arguments}"
    collectstatic = [run for run in instruction(dockerfile, "RUN") if "collectstatic" in run]
    assert len(collectstatic) == 1
    assert re.search(r"\bSECRET_KEY=\S+ .*manage\.py collectstatic --noinput", collectstatic[0])
    assert re.search(r"\bALLOWED_HOSTS=\S+", collectstatic[0])


def test_dockerfile_cmd_runs_gunicorn_on_config_wsgi(dockerfile, services):
    (cmd,) = instruction(dockerfile, "CMD")
    command = argv(cmd)
    assert Path(command[0]).name == "gunicorn"
    assert "config.wsgi:application" in command
    assert option_value(command, "--bind", "-b") == "0.0.0.0:8000"
    assert_entry_point(command)
    # The image and compose run the same server: same options, whatever their spelling.
    web = argv(services["web"]["command"])
    for names in (("--config", "-c"), ("--bind", "-b"), ("--access-logfile",)):
        assert option_value(command, *names) == option_value(web, *names), names


def gunicorn_settings(command: list[str], monkeypatch, **environment) -> dict:
    """What gunicorn would run ``command`` with: its ``--config`` module's settings, read
    as gunicorn reads them (``python:module``), under ``environment``."""
    for name in ("WEB_WORKERS", "WEB_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    spec = option_value(command, "--config", "-c")
    assert spec and spec.startswith("python:"), f"no --config=python:module in {command}"
    module = importlib.reload(importlib.import_module(spec.removeprefix("python:")))
    assert not [part for part in command if part.startswith(("--workers", "-w", "--threads"))]
    return {name: getattr(module, name) for name in ("worker_class", "workers", "threads")}


@pytest.mark.parametrize("cores", [1, 2, 8])
def test_web_runs_threaded_workers_counted_from_the_cores(services, monkeypatch, cores):
    """gthread, one worker more than the cores the container may use, 4 threads each
    (docs/operations/sizing.md, "Web": 3 × 4 on 2 cores)."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    settings = gunicorn_settings(argv(services["web"]["command"]), monkeypatch)
    assert settings == {"worker_class": "gthread", "workers": cores + 1, "threads": 4}


def test_web_worker_counts_follow_the_environment(services, monkeypatch):
    settings = gunicorn_settings(
        argv(services["web"]["command"]), monkeypatch, WEB_WORKERS="6", WEB_THREADS="2"
    )
    assert (settings["workers"], settings["threads"]) == (6, 2)


def test_dockerfile_healthcheck_gets_healthz(dockerfile, monkeypatch):
    (healthcheck,) = instruction(dockerfile, "HEALTHCHECK")
    _, _, test = healthcheck.partition(" CMD ")
    command = argv(test)
    assert "curl" not in command and "wget" not in command, "python:3.11-slim has neither"
    request = run_healthcheck_code(python_code(command), monkeypatch, "gpufleet.example.com")
    assert request.full_url == "http://127.0.0.1:8000/healthz"
    assert request.get_header("Host") == "gpufleet.example.com"


def test_dockerignore_keeps_local_state_out_of_the_build_context():
    ignored = {line.strip() for line in DOCKERIGNORE.read_text().splitlines()}
    for entry in (".venv", "var", ".git", "test-artifacts", ".env", "**/__pycache__"):
        assert entry in ignored, f".dockerignore lacks {entry}"
