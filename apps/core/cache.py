"""A Redis cache that fails soft: with Redis unreachable, every read is a miss and every
write is dropped, so pages compute their figures in the request instead of answering 500.

What sits in the cache is either recomputable (report figures, apps/reports/cache.py) or
allowed to be lost (DRF's throttle history: an unreachable cache lets every request
through, with a warning in the log). Sessions and sign-in lockouts live in the database,
so signing in does not depend on Redis.

After a failure the cache is not asked again for ``RETRY_AFTER_SECONDS``: a page makes a
dozen cache calls, and a Redis host that drops packets would otherwise cost the connect
timeout (``socket_connect_timeout`` in ``CACHES["default"]["OPTIONS"]``) on each. The
failure is logged once per ``LOG_INTERVAL_SECONDS``, with the number of calls answered
as misses since.
"""

import logging
import threading
import time

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5.0
LOG_INTERVAL_SECONDS = 60.0
UNREACHABLE_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)


class _Outage:
    """Whether one Redis location is known to be unreachable, shared by the threads of a
    process (Django makes one cache object per thread)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.failed_at = None  # time.monotonic() of the last failure, None while reachable
        self.logged_at = None
        self.calls_missed = 0

    def skipping(self) -> bool:
        with self.lock:
            if self.failed_at is None:
                return False
            if time.monotonic() - self.failed_at >= RETRY_AFTER_SECONDS:
                return False  # time to try Redis again
            self.calls_missed += 1
            return True

    def failed(self, location: str, operation: str, error: Exception) -> None:
        with self.lock:
            now = time.monotonic()
            self.failed_at = now
            self.calls_missed += 1
            if self.logged_at is not None and now - self.logged_at < LOG_INTERVAL_SECONDS:
                return
            self.logged_at, missed, self.calls_missed = now, self.calls_missed, 0
        logger.warning(
            "cache at %s unreachable (%s: %s); answering as a miss (%d calls since the last "
            "warning), not retried for %.0f s",
            location,
            operation,
            error,
            missed,
            RETRY_AFTER_SECONDS,
        )

    def succeeded(self, location: str) -> None:
        if self.failed_at is None:
            return
        with self.lock:
            was_down, self.failed_at, self.logged_at = self.failed_at is not None, None, None
            self.calls_missed = 0
        if was_down:
            logger.warning("cache at %s reachable again", location)


_outages: dict[str, _Outage] = {}
_outages_lock = threading.Lock()


def _outage_for(location: str) -> _Outage:
    with _outages_lock:
        return _outages.setdefault(location, _Outage())


class _SharedClients(RedisCacheClient):
    """Django's Redis client maker, keeping one ``redis.Redis`` per connection pool rather
    than making one per call: a page makes five to ten cache calls, and making a client
    costs more CPU than the call it serves. A ``redis.Redis`` takes a connection from its
    pool per command, so threads may share it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._client(connection_pool=self._get_connection_pool(index))
            self._clients[index] = client
        return client


class FailSoftRedisCache(RedisCache):
    """Django's Redis cache whose calls answer like an empty cache when Redis cannot be
    reached: ``get`` the default, ``get_many`` nothing, ``add``/``delete``/``touch``/
    ``has_key`` False, ``incr``/``decr`` None, ``set``/``set_many`` nothing stored."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = _SharedClients
        self._location = server if isinstance(server, str) else ",".join(server)
        self._outage = _outage_for(self._location)

    @property
    def unreachable(self) -> bool:
        """True while a recent call failed (the next ``RETRY_AFTER_SECONDS``)."""
        failed_at = self._outage.failed_at
        return failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_SECONDS

    def _call(self, operation: str, missed, *args, **kwargs):
        if self._outage.skipping():
            return missed
        try:
            result = getattr(super(), operation)(*args, **kwargs)
        except UNREACHABLE_ERRORS as error:
            self._outage.failed(self._location, operation, error)
            return missed
        self._outage.succeeded(self._location)
        return result

    def add(self, *args, **kwargs):
        return self._call("add", False, *args, **kwargs)

    def get(self, key, default=None, version=None):
        return self._call("get", default, key, default, version)

    def set(self, *args, **kwargs):
        return self._call("set", None, *args, **kwargs)

    def touch(self, *args, **kwargs):
        return self._call("touch", False, *args, **kwargs)

    def delete(self, *args, **kwargs):
        return self._call("delete", False, *args, **kwargs)

    def get_many(self, *args, **kwargs):
        return self._call("get_many", {}, *args, **kwargs)

    def has_key(self, *args, **kwargs):
        return self._call("has_key", False, *args, **kwargs)

    def incr(self, *args, **kwargs):
        return self._call("incr", None, *args, **kwargs)

    def set_many(self, data, *args, **kwargs):
        return self._call("set_many", list(data), data, *args, **kwargs)

    def delete_many(self, *args, **kwargs):
        return self._call("delete_many", None, *args, **kwargs)

    def clear(self):
        return self._call("clear", False)


def cache_unreachable(alias: str = "default") -> bool:
    """Whether the cache ``alias`` failed a call in the last ``RETRY_AFTER_SECONDS``
    (always False for backends that do not fail soft)."""
    return bool(getattr(caches[alias], "unreachable", False))
