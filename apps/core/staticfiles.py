"""Staticfiles finder exposing the plotly.js bundle shipped inside the plotly wheel.

The wheel's ``package_data`` also holds datasets and templates we do not want in
STATIC_ROOT, so this finder serves exactly one file, as ``vendor/plotly/plotly.min.js``.
"""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "vendor/plotly/plotly.min.js"
_PLOTLY_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class _SingleFileStorage(FileSystemStorage):
    """Storage whose ``path`` maps the public name to the wheel's file."""

    def path(self, name):
        return str(_PLOTLY_PACKAGE_DATA / "plotly.min.js")


class PlotlyWheelFinder(BaseFinder):
    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        # Django 5.2 renamed the keyword ``all`` to ``find_all``; accept both.
        find_all = find_all or kwargs.get("all", False)
        if path != PLOTLY_STATIC_PATH:
            return [] if find_all else None
        location = str(_PLOTLY_PACKAGE_DATA / "plotly.min.js")
        return [location] if find_all else location

    def list(self, ignore_patterns):
        storage = _SingleFileStorage(location=str(_PLOTLY_PACKAGE_DATA))
        storage.prefix = ""
        yield PLOTLY_STATIC_PATH, storage
