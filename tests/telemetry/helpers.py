"""What several telemetry test modules do the same way."""

from django.core.management import call_command

COLUMNS = "timestamp=time,device=gpu,utilization_pct=util"


def import_csv_command(path, pool, *extra, columns: str = COLUMNS) -> None:
    """``manage.py import_telemetry PATH --format csv --pool SLUG --columns …`` as cron
    runs it; a refused file raises CommandError."""
    call_command(
        "import_telemetry",
        str(path),
        "--format",
        "csv",
        "--pool",
        pool.slug,
        "--columns",
        columns,
        *extra,
        stdout=None,
    )
