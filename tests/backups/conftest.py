import pytest


@pytest.fixture(autouse=True)
def media_in_tmp(settings, tmp_path):
    """Evidence uploads land in a temporary MEDIA_ROOT, never in var/media."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
