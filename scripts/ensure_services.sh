#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer on the test addresses. Starts them when they
# are installed but stopped; when they are not installed, starts the embedded ones of
# gpufleet's own wheels on those addresses (scripts/embedded_test_services.py), which
# `make test` stops when the suite ends. A fresh machine needs only Python.
set -euo pipefail

PYTHON="${PYTHON:-.venv/bin/python}"
# Host and port of DATABASE_URL and REDIS_URL when given (make test passes the test URLs).
host_port() {  # url default-port
  "$PYTHON" -c 'import sys; from urllib.parse import urlsplit; u = urlsplit(sys.argv[1]); print(u.hostname or "127.0.0.1", u.port or sys.argv[2])' "$1" "$2"
}
read -r PG_HOST PG_PORT < <(host_port "${DATABASE_URL:-postgres://127.0.0.1:5432/}" 5432)
read -r REDIS_HOST REDIS_PORT < <(host_port "${REDIS_URL:-redis://127.0.0.1:6379/}" 6379)

reachable() {  # host port
  "$PYTHON" - "$1" "$2" <<'PY'
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2).close()
except OSError:
    sys.exit(1)
PY
}

wait_for() {  # name host port
  for _ in $(seq 1 15); do
    reachable "$2" "$3" && return 0
    sleep 1
  done
  echo "error: $1 was started but does not answer on $2:$3 after 15 s" >&2
  return 1
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

start_system_postgres() {  # an installed but stopped server; fails when there is none
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    version="$(ls /etc/postgresql | sort -V | tail -n 1)"
    echo "PostgreSQL: not answering; starting cluster $version/main"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
  elif command -v brew >/dev/null 2>&1 && brew list postgresql@16 >/dev/null 2>&1; then
    brew services start postgresql@16
  else
    return 1
  fi
}

start_system_redis() {
  command -v redis-server >/dev/null 2>&1 || return 1
  echo "Redis: not answering; starting redis-server"
  mkdir -p var/redis
  redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" --save "" \
    --appendonly no --dir "$PWD/var/redis" --logfile "$PWD/var/redis/redis.log"
}

# A system server that starts but listens elsewhere (another port) leaves the address
# unanswered: the embedded one takes it then.
if reachable "$PG_HOST" "$PG_PORT"; then
  echo "PostgreSQL: reachable on $PG_HOST:$PG_PORT"
elif start_system_postgres && wait_for PostgreSQL "$PG_HOST" "$PG_PORT" 2>/dev/null; then
  echo "PostgreSQL: started"
else
  echo "PostgreSQL: none on $PG_HOST:$PG_PORT; starting the embedded one"
  "$PYTHON" scripts/embedded_test_services.py start postgres "$PG_HOST" "$PG_PORT"
fi

if reachable "$REDIS_HOST" "$REDIS_PORT"; then
  echo "Redis: reachable on $REDIS_HOST:$REDIS_PORT"
elif start_system_redis && wait_for Redis "$REDIS_HOST" "$REDIS_PORT" 2>/dev/null; then
  echo "Redis: started"
else
  echo "Redis: none on $REDIS_HOST:$REDIS_PORT; starting the embedded one"
  "$PYTHON" scripts/embedded_test_services.py start redis "$REDIS_HOST" "$REDIS_PORT"
fi

# The test database itself is created by pytest-django; the named one must exist too,
# or manage.py commands run against it (makemigrations --check) warn that it is missing.
if [ -n "${DATABASE_URL:-}" ]; then
  "$PYTHON" - "$DATABASE_URL" <<'PY'
import sys
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

url = urlsplit(sys.argv[1])
name = url.path.lstrip("/")
admin_url = url._replace(path="/postgres").geturl()
with psycopg.connect(admin_url, autocommit=True) as connection:
    exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
    if not exists:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        print(f"PostgreSQL: created database {name}")
PY
fi
