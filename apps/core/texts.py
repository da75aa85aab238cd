"""The reader's language for sentences written in English where the work happens
(apps/core/sentences.py): each is rebuilt from the catalogue when a page shows it."""

from django.utils.translation import gettext

from apps.core.sentences import from_data, render


def translated(text):
    """``text`` in the active language: a ``Sentence`` from its msgid and values, a
    message carried by an exception (whose ``str()`` drops the ``Sentence``) the same
    way; anything else unchanged."""
    if isinstance(text, BaseException):
        text = text.args[0] if len(text.args) == 1 else str(text)
    return render(text, gettext)


def translated_data(data: list[dict] | None, fallback: str = "") -> str:
    """Stored sentence parts (``sentences.to_data``) in the active language, read one
    after the other; ``fallback`` (the stored English) when there are none."""
    if not data:
        return fallback
    return "".join(translated(part) for part in from_data(data))


def rounding_label() -> str:
    """The label of the line under a summed table whose rounded rows miss its rounded
    total (apps/core/money.py ``rounding_line``), in the request's language."""
    return gettext("Rounding")
