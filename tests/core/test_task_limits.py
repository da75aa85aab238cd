"""Every task can be sent: Celery refuses at ``apply_async`` a task whose soft time limit
(its own, else CELERY_TASK_SOFT_TIME_LIMIT) is not below its hard one ("soft_time_limit
must be less than or equal to time_limit"), so beat would never deliver it."""

from config.celery_app import app


def test_every_task_stops_softly_before_it_is_killed():
    app.loader.import_default_modules()
    default_soft = app.conf.task_soft_time_limit
    default_hard = app.conf.task_time_limit
    problems = []
    for name, task in sorted(app.tasks.items()):
        if name.startswith("celery."):
            continue
        hard = task.time_limit or default_hard
        soft = task.soft_time_limit or default_soft
        if hard and soft and soft > hard:
            problems.append(f"{name}: soft {soft} s > hard {hard} s")
    assert problems == []
    assert "telemetry.purge_kept_uploads" in app.tasks
