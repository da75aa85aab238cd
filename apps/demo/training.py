"""A training event log for the demo's pre-training run (``manage.py seed_demo``), shaped
as ``goodput_measure`` writes one: a job that resumed from step 40,900, saved every 100
steps and restarted twice after crashes, up to step 42,000.

Its checkpoint steps meet the demo's backup versions of the workload (steps 41,000 and
42,000, apps/backups/demo.py) at the versions' own timestamps, so the drill that passed
on step 41,000 proves that checkpoint restorable and the workload page shows its dollars
at risk since then, its goodput and the drill it rests on. The versions' timestamps come
from the first seeding, so a second run finds the job's events and adds nothing.
"""

import json
from datetime import timedelta

from apps.backups.models import BackupVersion
from apps.training import services
from apps.training.models import TrainingEvent, TrainingImportRun

DEMO_WORKLOAD = "llama3-70b-pretrain"
DEMO_JOB = "llama3-70b-pretrain-run3"
FIRST_STEP_SAVED, LAST_STEP_SAVED, STEPS_PER_SAVE = 41_000, 42_000, 100
RESUMED_FROM_STEP = 40_900
# The saves after which a node failed: the job stopped before its next save.
CRASHED_AFTER_STEPS = (41_300, 41_700)
RESTART_MINUTES = 20
LOAD_MINUTES = 12


def _events(first_saved_at, last_saved_at) -> list[dict]:
    saves = range(FIRST_STEP_SAVED, LAST_STEP_SAVED + 1, STEPS_PER_SAVE)
    per_save = (last_saved_at - first_saved_at) / (len(saves) - 1)
    started_at = first_saved_at - per_save
    events = [
        {"timestamp": started_at, "event_type": "job_started", "node_rank": 0},
        {
            "timestamp": started_at + timedelta(minutes=LOAD_MINUTES),
            "event_type": "checkpoint_loaded",
            "step": RESUMED_FROM_STEP,
        },
    ]
    for index, step in enumerate(saves):
        saved_at = first_saved_at + per_save * index
        events.append({"timestamp": saved_at, "event_type": "checkpoint_saved", "step": step})
        if step in CRASHED_AFTER_STEPS:
            crashed_at = saved_at + per_save * 0.6
            restarted_at = crashed_at + timedelta(minutes=RESTART_MINUTES)
            events += [
                {"timestamp": crashed_at, "event_type": "job_terminated", "node_rank": 0},
                {"timestamp": restarted_at, "event_type": "job_started", "node_rank": 0},
                {
                    "timestamp": restarted_at + timedelta(minutes=LOAD_MINUTES),
                    "event_type": "checkpoint_loaded",
                    "step": step,
                },
            ]
    return events


def seed_training_demo(workload) -> int:
    """Import the demo job's event log once into the demo's ``workload`` (its
    ``DEMO_WORKLOAD``); returns the events stored."""
    if (
        workload is None
        or TrainingEvent.objects.filter(workload=workload, job_name=DEMO_JOB).exists()
    ):
        return 0
    saved_at = dict(
        BackupVersion.objects.filter(
            workload=workload, step__in=(FIRST_STEP_SAVED, LAST_STEP_SAVED)
        ).values_list("step", "created_at")
    )
    if len(saved_at) != 2:
        return 0
    lines = [
        json.dumps({**event, "timestamp": event["timestamp"].isoformat(), "job_name": DEMO_JOB})
        for event in _events(saved_at[FIRST_STEP_SAVED], saved_at[LAST_STEP_SAVED])
    ]
    run = services.import_events(
        workload=workload,
        text="\n".join(lines) + "\n",
        format="jsonl",
        source=TrainingImportRun.Source.COMMAND,
        filename=f"{DEMO_JOB}.jsonl",
    )
    return run.events_accepted
