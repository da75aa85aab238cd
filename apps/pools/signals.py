"""What pools tell the apps above them, which they do not import (the layers in
pyproject.toml): telemetry recomputes a pool's rollups when its service period changes."""

from django.dispatch import Signal

# Sent with ``pool`` after a saved edit changed its in-service period.
service_period_changed = Signal()
