"""Rule kinds and the evaluators that compute what breaches them, by kind.

An evaluator takes a rule and the moment of the evaluation and returns the rule's
**subjects** that breach it now: each with the labels that identify it (their
fingerprint keys the alert, so the same subject breaching again next minute is the same
alert) and the sentences that describe it. ``apps/alerts/evaluators.py`` registers the
built-in kinds; a kind whose figures live in an app that is not installed has no
evaluator, and a rule of that kind is refused with ``UNAVAILABLE[kind]``, the sentence
that says what it needs. ``apps/alerts/budget_evaluator.py`` registers the budget kind
from the showback app's figures.

Plain Python: no Django imports, so the registry is imported by models and forms alike.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from apps.core.sentences import Sentence, gettext_noop

IDLE_COST = "idle_cost"
LOW_UTILISATION = "low_utilisation"
BUDGET = "budget"
DRILL_OVERDUE = "drill_overdue"
DRILL_FAILED = "drill_failed"
TELEMETRY_STALE = "telemetry_stale"
FLAGGED_HOURS = "flagged_hours"
JOB_FAILED = "job_failed"
DOLLARS_AT_RISK = "dollars_at_risk"

# (value, label msgid), in the order the form offers them.
KINDS = (
    (IDLE_COST, gettext_noop("Idle cost of a pool above an amount")),
    (LOW_UTILISATION, gettext_noop("Utilisation of a pool below a percentage")),
    (BUDGET, gettext_noop("Budget of a team or pool crossing 50, 75, 90 or 100 %")),
    (DRILL_OVERDUE, gettext_noop("Restore drill overdue")),
    (DRILL_FAILED, gettext_noop("Latest restore drill failed")),
    (TELEMETRY_STALE, gettext_noop("Telemetry stale: no sample from a pool")),
    (FLAGGED_HOURS, gettext_noop("Flagged pool-hours")),
    (JOB_FAILED, gettext_noop("An import, export or recompute failed")),
    (DOLLARS_AT_RISK, gettext_noop("Dollars at risk of a training workload above an amount")),
)

# The rule's fields that hold a kind's thresholds, units in their names.
THRESHOLD_FIELDS = ("threshold_usd", "threshold_pct", "window_hours", "stale_minutes")

# Why a kind without an evaluator cannot be chosen yet.
UNAVAILABLE: dict[str, str] = {}


@dataclass(frozen=True)
class Subject:
    """Something that breaches a rule now. ``labels`` identify it (strings only, stable
    from one evaluation to the next); ``summary`` and ``description`` say what is wrong
    in English sentences that keep their msgids; ``team_id`` is the team the subject
    belongs to (None: shared), which decides who sees its alert."""

    labels: dict[str, str]
    summary: Sentence
    description: Sentence
    team_id: int | None = None
    url: str = ""  # the page where it is dealt with, relative to the site


@dataclass(frozen=True)
class Evaluator:
    kind: str
    evaluate: Callable  # (rule, now) -> list[Subject]
    thresholds: tuple[str, ...] = ()  # the threshold fields the kind needs
    severity: str = "warning"


_EVALUATORS: dict[str, Evaluator] = {}


def register(kind: str, *, thresholds: tuple[str, ...] = (), severity: str = "warning"):
    """Decorator: ``fn(rule, now) -> list[Subject]`` evaluates rules of ``kind``."""
    if kind not in dict(KINDS):
        raise ValueError(f"unknown rule kind {kind!r}")
    unknown = set(thresholds) - set(THRESHOLD_FIELDS)
    if unknown:
        raise ValueError(f"not threshold fields: {sorted(unknown)}")

    def decorate(function):
        _EVALUATORS[kind] = Evaluator(kind, function, tuple(thresholds), severity)
        return function

    return decorate


def evaluator_for(kind: str) -> Evaluator | None:
    return _EVALUATORS.get(kind)


def unavailable_reason(kind: str) -> str | None:
    """Why rules of ``kind`` cannot be saved (a msgid), or None when they can."""
    if kind in _EVALUATORS:
        return None
    return UNAVAILABLE.get(kind, gettext_noop("this kind of rule has no evaluator"))


def fingerprint(labels: dict[str, str]) -> str:
    """16 hex digits identifying a label set, as Alertmanager's fingerprints are 64-bit:
    the first 8 bytes of SHA-256 over the labels sorted by name."""
    text = json.dumps(sorted(labels.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
