import re

from django.db import migrations, models

# A succeeded run's stored English sentence (its counts), as the importer wrote it before
# runs kept their sentences' msgids: read once here, so older runs are said in each
# reader's language too. Any other message stays as written.
_SUCCEEDED = re.compile(
    r"(?P<accepted>\d+) rows accepted, (?P<duplicates>\d+) duplicates skipped, "
    r"(?P<rejected>\d+) rows rejected"
    r"(?:; (?P<new>\d+) new GPU\(s\) registered)?"
    r"(?:, (?P<waiting>\d+) waiting for a pool on the unassigned-GPUs page)?\."
)


def _part(msgid, **values):
    return {"msgid": msgid, "values": values}


def parts_of(message: str) -> list[dict]:
    match = _SUCCEEDED.fullmatch(message)
    if not match:
        return []
    counts = {name: int(value) for name, value in match.groupdict().items() if value}
    parts = [
        _part(
            "%(accepted)s rows accepted, %(duplicates)s duplicates skipped, "
            "%(rejected)s rows rejected",
            accepted=counts["accepted"],
            duplicates=counts["duplicates"],
            rejected=counts["rejected"],
        )
    ]
    if "new" in counts:
        parts.append(_part("; %(count)s new GPU(s) registered", count=counts["new"]))
    if "waiting" in counts:
        parts.append(
            _part(
                ", %(count)s waiting for a pool on the unassigned-GPUs page",
                count=counts["waiting"],
            )
        )
    return [*parts, _part(".")]


def keep_sentences_of_succeeded_runs(apps, schema_editor):
    ImportRun = apps.get_model("telemetry", "ImportRun")
    changed = []
    for run in ImportRun.objects.filter(status="succeeded").only("pk", "message").iterator():
        parts = parts_of(run.message)
        if parts:
            run.message_parts = parts
            changed.append(run)
        if len(changed) >= 1000:
            ImportRun.objects.bulk_update(changed, ["message_parts"])
            changed = []
    ImportRun.objects.bulk_update(changed, ["message_parts"])


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0014_translatable_labels"),
    ]

    operations = [
        migrations.AddField(
            model_name="importrun",
            name="message_parts",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(keep_sentences_of_succeeded_runs, migrations.RunPython.noop, elidable=True),
    ]
