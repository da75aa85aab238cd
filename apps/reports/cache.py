"""Report figures cached until the data under them changes (issue 5: "add daily rollups
or caching where needed").

Every cached entry's key holds the *reports version*, a counter in the cache that every
write affecting a report bumps: hourly and daily rollups (apps/reports/rollups.py), and
saving or deleting a pool, workload, GPU model or interruption (apps/reports/signals.py).
A bumped counter makes every older entry unreachable, so a page never shows figures
older than the data; entries also expire after ``TTL_SECONDS`` so the cache cleans itself.
The key also holds the current UTC hour, because "the last 24 hours" moves with it.
"""

import hashlib
import json

from django.core.cache import cache
from django.utils import timezone

VERSION_KEY = "reports:version"
TTL_SECONDS = 15 * 60


def reports_version() -> int:
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, 1, timeout=None)
        version = cache.get(VERSION_KEY, 1)
    return version


def bump_reports_version() -> None:
    try:
        cache.incr(VERSION_KEY)
    except ValueError:  # not there yet (fresh cache)
        cache.add(VERSION_KEY, 2, timeout=None)


def cached(name: str, params: dict, compute):
    """``compute()``'s result, from the cache while nothing it reads has changed."""
    hour = timezone.now().strftime("%Y%m%d%H")
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    key = f"reports:{name}:{reports_version()}:{hour}:{digest[:24]}"
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, timeout=TTL_SECONDS)
    return found
