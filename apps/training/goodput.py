"""Measured goodput of a training job from its event log: framework-free maths.

The definitions follow Google's ``resiliency.goodput_measure`` library
(AI-Hypercomputer/resiliency, ``resiliency/goodput_measure/calculator.py`` and the
"Goodput Primer" of ``examples/goodput_measurement/README.md``, Apache-2.0):

- events are ordered by timestamp, then by event type (user_scheduled, job_started,
  checkpoint_loaded, checkpoint_saved, user_terminated, job_terminated), and a run of
  consecutive ``job_started`` (or ``job_terminated``) events keeps only its last one, so
  a multi-node job's per-node starts count as one start;
- total time = last event − first event;
- effective computation time = (highest step saved − lowest step loaded) × the reference
  step time, counted only when some checkpoint was loaded and a step above 0 was saved;
- goodput = effective computation time ÷ total time × 100 %.

The badput split is the primer's: checkpoint loading (each start → the checkpoint it
loads), training progress lost (the last save of a run → its termination; a run that
saved nothing loses everything since its load, or its start), job restart (a
termination → the next start), checkpoint saving (only where the log gives each save's
duration: the library's format has none) and training slowdown, the remainder.

Nothing is bent silently into 0–100 %: a goodput above 100 % (a reference step time too
long, steps that jump) or categories that add up to more than the total time are
clamped *and flagged*, so the page says why the numbers do not add up.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

USER_SCHEDULED = "user_scheduled"
USER_TERMINATED = "user_terminated"
JOB_STARTED = "job_started"
JOB_TERMINATED = "job_terminated"
CHECKPOINT_LOADED = "checkpoint_loaded"
CHECKPOINT_SAVED = "checkpoint_saved"

# The library's EVENT_TYPE_ORDER: how events with the same timestamp are ordered.
EVENT_TYPE_ORDER = {
    USER_SCHEDULED: 0,
    JOB_STARTED: 1,
    CHECKPOINT_LOADED: 2,
    CHECKPOINT_SAVED: 3,
    USER_TERMINATED: 4,
    JOB_TERMINATED: 5,
}
EVENT_TYPES = tuple(EVENT_TYPE_ORDER)

BADPUT_CATEGORIES = (
    "checkpoint_loading",
    "progress_lost",
    "restart",
    "checkpoint_saving",
    "slowdown",
)

# Flags: why a figure is missing, clamped or partial.
NO_REFERENCE_STEP = "no_reference_step"
NO_CHECKPOINT_LOADED = "no_checkpoint_loaded"
NO_CHECKPOINT_SAVED = "no_checkpoint_saved"
GOODPUT_ABOVE_100 = "goodput_above_100"
BADPUT_ABOVE_TOTAL = "badput_above_total"
FLAGS = (
    NO_REFERENCE_STEP,
    NO_CHECKPOINT_LOADED,
    NO_CHECKPOINT_SAVED,
    GOODPUT_ABOVE_100,
    BADPUT_ABOVE_TOTAL,
)


@dataclass(frozen=True)
class Event:
    timestamp: datetime
    event_type: str
    step: int | None = None
    node_rank: int | None = None
    duration_seconds: float | None = None


@dataclass
class Goodput:
    """One job's (or a sum of jobs') goodput; every time in seconds."""

    total_seconds: float = 0.0
    effective_seconds: float = 0.0
    badput_seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(BADPUT_CATEGORIES, 0.0)
    )
    min_loaded_step: int | None = None
    max_saved_step: int | None = None
    job_starts: int = 0
    flags: list[str] = field(default_factory=list)

    @property
    def goodput_pct(self) -> float | None:
        if self.total_seconds <= 0:
            return None
        return min(100.0, self.effective_seconds / self.total_seconds * 100)

    @property
    def step_difference(self) -> int | None:
        if self.min_loaded_step is None or self.max_saved_step is None:
            return None
        return self.max_saved_step - self.min_loaded_step

    def _flag(self, flag: str) -> None:
        if flag not in self.flags:
            self.flags.append(flag)


def preprocess(events: Iterable[Event]) -> list[Event]:
    """The library's timeline: sorted by (timestamp, event type order), a run of
    consecutive job_started (or job_terminated) events reduced to its last one."""
    ordered = sorted(
        events, key=lambda event: (event.timestamp, EVENT_TYPE_ORDER[event.event_type])
    )
    kept: list[Event] = []
    for event in ordered:
        if (
            event.event_type in (JOB_STARTED, JOB_TERMINATED)
            and kept
            and kept[-1].event_type == event.event_type
        ):
            kept.pop()
        kept.append(event)
    return kept


def _seconds(later: datetime, earlier: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds())


def job_goodput(events: Iterable[Event], *, reference_step_seconds: float | None) -> Goodput:
    """Goodput and the badput split of one job's events (see the module docstring)."""
    events = list(events)
    timeline = preprocess(events)
    result = Goodput()
    if not timeline:
        return result
    # The library measures from the very first event (its proxy user_scheduled copies it),
    # so the first of several per-node starts opens the clock although only the last is kept.
    first_at = min(event.timestamp for event in events)
    result.total_seconds = _seconds(timeline[-1].timestamp, first_at)

    loaded_steps = [e.step or 0 for e in timeline if e.event_type == CHECKPOINT_LOADED]
    saved_steps = [e.step or 0 for e in timeline if e.event_type == CHECKPOINT_SAVED]
    if loaded_steps:
        result.min_loaded_step = min(loaded_steps)
    else:
        result._flag(NO_CHECKPOINT_LOADED)
    # The library starts its highest saved step at 0 and counts it only above 0.
    if saved_steps and max(saved_steps) > 0:
        result.max_saved_step = max(saved_steps)
    else:
        result._flag(NO_CHECKPOINT_SAVED)
    if reference_step_seconds is None:
        result._flag(NO_REFERENCE_STEP)
    difference = result.step_difference
    if difference is not None and difference > 0 and reference_step_seconds is not None:
        result.effective_seconds = difference * float(reference_step_seconds)

    badput = result.badput_seconds
    started_at = loaded_at = saved_at = terminated_at = None
    for event in timeline:
        kind = event.event_type
        if kind == JOB_STARTED:
            result.job_starts += 1
            if terminated_at is not None:
                badput["restart"] += _seconds(event.timestamp, terminated_at)
            started_at, loaded_at, saved_at, terminated_at = event.timestamp, None, None, None
        elif kind == CHECKPOINT_LOADED:
            if started_at is not None and loaded_at is None:
                badput["checkpoint_loading"] += _seconds(event.timestamp, started_at)
            loaded_at = event.timestamp
        elif kind == CHECKPOINT_SAVED:
            saved_at = event.timestamp
            if event.duration_seconds:
                badput["checkpoint_saving"] += float(event.duration_seconds)
        elif kind == JOB_TERMINATED:
            safe_since = saved_at or loaded_at or started_at
            if safe_since is not None:
                badput["progress_lost"] += _seconds(event.timestamp, safe_since)
            started_at, loaded_at, saved_at, terminated_at = None, None, None, event.timestamp

    _settle(result)
    return result


def _settle(result: Goodput) -> None:
    """Slowdown is what the other figures leave of the total; clamp and flag what cannot be."""
    if result.total_seconds > 0 and result.effective_seconds > result.total_seconds:
        result._flag(GOODPUT_ABOVE_100)
        result.effective_seconds = result.total_seconds
    named = sum(seconds for name, seconds in result.badput_seconds.items() if name != "slowdown")
    remainder = result.total_seconds - result.effective_seconds - named
    if remainder < -1e-6:
        result._flag(BADPUT_ABOVE_TOTAL)
    result.badput_seconds["slowdown"] = max(0.0, remainder)


def combine(results: Iterable[Goodput]) -> Goodput:
    """Several jobs' goodput as one: times added, goodput = Σ effective ÷ Σ total."""
    combined = Goodput()
    for result in results:
        combined.total_seconds += result.total_seconds
        combined.effective_seconds += result.effective_seconds
        combined.job_starts += result.job_starts
        for name, seconds in result.badput_seconds.items():
            combined.badput_seconds[name] += seconds
        for flag in result.flags:
            combined._flag(flag)
        combined.min_loaded_step = _lowest(combined.min_loaded_step, result.min_loaded_step)
        combined.max_saved_step = _highest(combined.max_saved_step, result.max_saved_step)
    return combined


def _lowest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _highest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)
