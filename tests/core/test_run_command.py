"""`manage.py run` (make run) leaves the data of an earlier gpufleet where it is and says
how to bring it over; the whole stack is walked by tests/journey."""

import io

from apps.core.management.commands.run import Command


def test_an_earlier_database_file_is_kept_and_the_way_over_is_said(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    earlier = tmp_path / "gpufleet.sqlite3"
    earlier.write_bytes(b"their fleet")
    command = Command(stdout=io.StringIO())

    command._say_where_earlier_data_is()

    said = command.stdout._out.getvalue()
    assert str(earlier) in said
    assert "manage.py dumpdata" in said and "manage.py loaddata fleet.json" in said
    assert earlier.read_bytes() == b"their fleet"


def test_nothing_is_said_without_an_earlier_database_file(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    command = Command(stdout=io.StringIO())

    command._say_where_earlier_data_is()

    assert command.stdout._out.getvalue() == ""
