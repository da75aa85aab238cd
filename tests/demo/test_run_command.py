"""`manage.py run` (make run) leaves the data of an earlier gpufleet where it is and says
how to bring it over; the whole stack is walked by tests/journey."""

import io

import pytest

from apps.demo.management.commands.run import Command


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


@pytest.mark.django_db
def test_the_banner_names_the_demo_users_as_they_are_named_here(make_user):
    """A user of one's own named `admin` keeps the name; the demo's is named apart, and the
    banner says the name to sign in with."""
    from django.contrib.auth import get_user_model

    from apps.demo.registry import DemoRegistry

    make_user("lead")
    demo_admin = get_user_model().objects.create_user("admin-demo")
    DemoRegistry.load().mark(demo_admin, "admin")

    assert Command()._demo_usernames() == {"admin": "admin-demo"}
