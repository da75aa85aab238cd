"""The reader's language for the sentences of the framework-free modules
(apps/core/sentences.py): each is rebuilt from the catalogue when a page shows it."""

from apps.core.texts import translated

__all__ = ["translated"]
