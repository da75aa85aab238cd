"""Waiting for something another process or thread does, with a deadline.

Tests wait for the event itself (a run finished, a row appeared, a server answered),
checking it every ``interval_seconds``; a fixed sleep would be either too short on a
loaded machine or wasted time on an idle one.
"""

import time

import pytest


def wait_until(condition, *, timeout_seconds, what, interval_seconds=0.05):
    """Return ``condition()``'s first truthy value; fail naming ``what`` after the deadline."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_seconds} s waiting for {what}")
        time.sleep(interval_seconds)
