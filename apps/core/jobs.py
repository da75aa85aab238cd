"""The lifecycle every background run shares (imports, exports, recomputes): an abstract
``Job`` model with its fields and the methods that move it along.

A job is created waiting, claimed by a worker (``apps.core.runs.claim``), runs inside
``job.running()`` (which keeps its heartbeat fresh and records an error as a failure),
reports ``advance(percent)`` on the way and ends with ``succeed(message)``; the reaper
(``apps.core.runs.reap``) marks one whose worker stopped interrupted.

Each concrete model keeps its own ``status`` field and ``Status`` choices, whose values
and labels differ where the pages differ ("queued"/"pending", "done"/"succeeded"). They
agree on "running", "failed" and "interrupted"; the values that differ are named by
``not_started_status`` and ``succeeded_status``, and ``finished_statuses`` lists the
statuses after which nothing changes until someone starts the job again.
"""

from collections.abc import Iterable
from contextlib import contextmanager

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from apps.core import runs
from apps.core.sentences import Sentence, sentence, to_data
from apps.core.texts import translated_data

RUNNING = runs.RUNNING
FAILED = "failed"
INTERRUPTED = runs.INTERRUPTED


class Job(models.Model):
    # The values of the concrete model's Status that differ between models.
    not_started_status = "pending"
    succeeded_status = "succeeded"
    finished_statuses: tuple[str, ...] = ("succeeded", FAILED, INTERRUPTED)
    # What the job is called in sentences: "the export", "waiting… the export is kept".
    job_noun = _("job")
    # The sentence a failure is recorded with; %(error)s is "RuntimeError: disk full". It
    # is stored in English with its msgid and values (``message_parts``), and each page
    # says it again in its reader's language.
    failure_sentence_template = gettext_noop(
        "The job stopped with an error (%(error)s). Start it again; the server log has the details."
    )
    # A job whose finished steps stay done (a recompute's days) shows on failure how far it
    # got; the others fill the bar, as their page shows no bar once finished.
    progress_kept_on_failure = False

    progress_pct = models.PositiveSmallIntegerField(default=0)
    message = models.TextField(blank=True)
    # ``message`` as sentences (apps/core/sentences.py: msgids and values), so a page shows
    # it in its reader's language; empty for a message written as plain text.
    message_parts = models.JSONField(default=list, blank=True)
    # Written at each progress update and every RUN_HEARTBEAT_SECONDS while it runs; the
    # reaper marks a run not heard from for a few minutes interrupted (apps/core/runs.py).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a worker started it.")
    # What the task was called with beyond the job's id, so the reaper can queue it again.
    task_arguments = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When its latest attempt began; empty for a job no worker has started.
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_finished(self) -> bool:
        return self.status in self.finished_statuses

    @classmethod
    def failure_sentence(cls, error: BaseException) -> Sentence:
        """The sentence a person reads when the job stopped with ``error``: what happened
        and what to do next."""
        return sentence(cls.failure_sentence_template, error=f"{type(error).__name__}: {error}")

    def message_in_language(self) -> str:
        """The message in the active language: from its sentences where it was stored
        with them, else as stored."""
        return translated_data(self.message_parts, self.message)

    def _set_message(self, message) -> None:
        """``message``: plain text, a ``Sentence``, or a list of them read one after the
        other; sentences are kept with their msgids too."""
        if isinstance(message, Sentence):
            message = [message]
        if isinstance(message, list):
            self.message = "".join(message)
            self.message_parts = to_data(message)
        else:
            self.message, self.message_parts = message, []

    def advance(
        self, percent: int, message: str | None = None, *, also_save: Iterable[str] = ()
    ) -> None:
        """Record progress (and a new message) with a fresh heartbeat; ``also_save``
        names other fields set on the job to write in the same UPDATE."""
        self.progress_pct, self.heartbeat_at = percent, timezone.now()
        fields = ["progress_pct", "heartbeat_at", *also_save]
        if message is not None:
            self._set_message(message)
            fields += ["message", "message_parts"]
        self.save(update_fields=fields)

    def finish(self, status: str, message: str, *, also_save: Iterable[str] = ()) -> None:
        """End the job in ``status`` with ``message``. Only the job's lifecycle fields and
        ``also_save`` are written: whatever else the run changed in memory before it
        stopped stays unsaved."""
        self.status, self.finished_at = status, timezone.now()
        self._set_message(message)
        fields = ["status", "message", "message_parts", "finished_at", *also_save]
        if status != FAILED or not self.progress_kept_on_failure:
            self.progress_pct = 100
            fields.append("progress_pct")
        self.save(update_fields=fields)

    def succeed(self, message: str, *, also_save: Iterable[str] = ()) -> None:
        self.finish(self.succeeded_status, message, also_save=also_save)

    def fail(self, message: str) -> None:
        self.finish(FAILED, message)

    @contextmanager
    def running(self, *, recorded: tuple[type[BaseException], ...] = ()):
        """Run the block as this job's work: its heartbeat is kept fresh meanwhile
        (``apps.core.runs.heartbeat``, whose progress reporter the block gets), and an
        exception marks the job failed with ``failure_sentence`` before it is raised on,
        so no error leaves the job showing "running". Exceptions in ``recorded`` are
        raised on untouched: the block records those on the job itself (an import's
        refused file)."""
        try:
            with runs.heartbeat(type(self), self.pk) as beat:
                yield beat
        except recorded:
            raise
        except Exception as error:
            self.fail(self.failure_sentence(error))
            raise
