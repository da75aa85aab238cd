"""Stop what a test run started in the background when the run is terminated (SIGTERM).

The one-node Slurm's daemons (tests/slurm/harness.py) run in sessions of their own, so a
SIGTERM sent to pytest alone, or to its process group, does not reach them, and pytest's
own teardown (which stops them on a normal end or Ctrl-C) never runs: the default action
of SIGTERM ends the process at once. ``StopOnSigterm`` stops them first, then lets the
SIGTERM do what it did before. No Django here: a test runs it in a small subprocess.
"""

import os
import signal
import threading
from collections.abc import Callable


class StopOnSigterm:
    """While installed, a SIGTERM calls ``stop()``, then the handler installed before:
    a Python handler is called with the signal; the default action is taken (the
    default put back and the signal sent again, so the process ends as terminated by
    SIGTERM); an ignored SIGTERM stays ignored.

    The previous handler is put back before ``stop()`` runs, so a second SIGTERM during
    the stop is the previous handler's (a supervisor that insists is obeyed), and
    ``restore()`` puts it back when the run ends normally."""

    def __init__(self, stop: Callable[[], None]):
        self.stop = stop
        self.previous = None
        self.installed = False

    def install(self) -> bool:
        """Install the handler; False, installing nothing, outside the main thread
        (Python sets signal handlers from the main thread only) or when it already is."""
        if self.installed or threading.current_thread() is not threading.main_thread():
            return False
        self.previous = signal.signal(signal.SIGTERM, self.handle)
        self.installed = True
        return True

    def restore(self) -> None:
        """Put the previous handler back (a handler not set from Python: the default)."""
        if not self.installed:
            return
        previous = self.previous if self.previous is not None else signal.SIG_DFL
        signal.signal(signal.SIGTERM, previous)
        self.installed = False

    def handle(self, signum, frame) -> None:
        previous = self.previous
        self.restore()
        try:
            self.stop()
        finally:
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:
                os.kill(os.getpid(), signum)
