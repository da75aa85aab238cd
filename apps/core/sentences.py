"""Sentences that are written in English where the work happens (a framework-free module,
a worker) and read in the reader's language where they are shown.

A ``Sentence`` is its English text (a plain ``str`` for every caller, log line and test)
that also keeps its msgid and the values put into it, so ``translated`` can rebuild it
from the catalogue when a page shows it. A value may itself be a ``Sentence`` (a reason
inside a sentence), translated with it. ``to_data`` and ``from_data`` carry one, or a
list of parts read one after the other, through a JSON field, so a job's stored message
is said again in each reader's language.

``gettext_noop`` marks a msgid for ``makemessages`` (xgettext knows the keyword) and
returns it unchanged. ``gettext`` translates at once, for text built while a page is
drawn (an explanation, a recommendation): the identity here, Django's once the core app
is ready (apps/core/apps.py). This module imports nothing from Django: the
framework-free modules (apps/pools/memory.py, costing.py, apps/reports/cost/explain.py, …)
build their text with it.
"""

from collections.abc import Callable, Iterable


def gettext_noop(msgid: str) -> str:
    return msgid


# Set to Django's gettext by apps/core/apps.py; plain Python keeps the English.
_translator: Callable[[str], str] = str


def install_translator(translator: Callable[[str], str]) -> None:
    global _translator
    _translator = translator


def gettext(msgid: str) -> str:
    """``msgid`` in the active language (English outside Django)."""
    return _translator(msgid)


class Sentence(str):
    msgid: str
    values: dict

    def __new__(cls, msgid: str, **values):
        sentence = super().__new__(cls, msgid % values if values else msgid)
        sentence.msgid, sentence.values = msgid, values
        return sentence

    def to_data(self) -> dict:
        return {
            "msgid": self.msgid,
            "values": {
                name: value.to_data() if isinstance(value, Sentence) else value
                for name, value in self.values.items()
            },
        }


def sentence(msgid: str, **values) -> Sentence:
    """``msgid % values``, remembering both."""
    return Sentence(msgid, **values)


def as_sentence(text: str) -> Sentence:
    """``text`` itself when it is a ``Sentence``, else plain text kept as one (a msgid
    the catalogue does not know reads as it is)."""
    return text if isinstance(text, Sentence) else Sentence(text)


def _value_from_data(value):
    if isinstance(value, dict) and set(value) == {"msgid", "values"}:
        return sentence_from_data(value)
    return value


def sentence_from_data(data: dict) -> Sentence:
    values = {name: _value_from_data(value) for name, value in data["values"].items()}
    return Sentence(data["msgid"], **values)


def to_data(parts: Sentence | Iterable[Sentence]) -> list[dict]:
    """A sentence, or parts read one after the other, as JSON-ready data."""
    if isinstance(parts, Sentence):
        parts = [parts]
    return [part.to_data() for part in parts]


def from_data(data: list[dict]) -> list[Sentence]:
    return [sentence_from_data(part) for part in data]


def render(text, gettext: Callable[[str], str]):
    """``text`` with every ``Sentence`` in it (itself, its values) rebuilt through
    ``gettext``; anything else unchanged."""
    msgid = getattr(text, "msgid", None)
    if msgid is None:
        return text
    if not text.values:
        return gettext(msgid)
    return gettext(msgid) % {name: render(value, gettext) for name, value in text.values.items()}
