#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer on the test addresses. Starts them when they
# are installed but stopped; says exactly what to install when they are missing.
set -euo pipefail

PYTHON="${PYTHON:-.venv/bin/python}"
PG_HOST="${PG_HOST:-127.0.0.1}"
PG_PORT="${PG_PORT:-5432}"
REDIS_HOST="${REDIS_HOST:-127.0.0.1}"
REDIS_PORT="${REDIS_PORT:-6379}"

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
  for _ in $(seq 1 30); do
    reachable "$2" "$3" && return 0
    sleep 1
  done
  echo "error: $1 was started but does not answer on $2:$3 after 30 s" >&2
  return 1
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

if reachable "$PG_HOST" "$PG_PORT"; then
  echo "PostgreSQL: reachable on $PG_HOST:$PG_PORT"
else
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    version="$(ls /etc/postgresql | sort -V | tail -n 1)"
    echo "PostgreSQL: not answering; starting cluster $version/main"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
  elif command -v brew >/dev/null 2>&1 && brew list postgresql@16 >/dev/null 2>&1; then
    brew services start postgresql@16
  else
    cat >&2 <<MSG
error: PostgreSQL is not running on $PG_HOST:$PG_PORT and is not installed here.
  Debian/Ubuntu: sudo apt-get install postgresql   (then re-run make test)
  macOS:         brew install postgresql@16 && brew services start postgresql@16
The tests connect as user 'postgres' without a password (trust auth on localhost);
set TEST_DATABASE_URL to use another server.
MSG
    exit 1
  fi
  wait_for PostgreSQL "$PG_HOST" "$PG_PORT"
  echo "PostgreSQL: started"
fi

if reachable "$REDIS_HOST" "$REDIS_PORT"; then
  echo "Redis: reachable on $REDIS_HOST:$REDIS_PORT"
else
  if command -v redis-server >/dev/null 2>&1; then
    echo "Redis: not answering; starting redis-server"
    mkdir -p var/redis
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" \
      --appendonly no --dir "$PWD/var/redis" --logfile "$PWD/var/redis/redis.log"
  else
    cat >&2 <<MSG
error: Redis is not running on $REDIS_HOST:$REDIS_PORT and is not installed here.
  Debian/Ubuntu: sudo apt-get install redis-server
  macOS:         brew install redis && brew services start redis
MSG
    exit 1
  fi
  wait_for Redis "$REDIS_HOST" "$REDIS_PORT"
  echo "Redis: started"
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
