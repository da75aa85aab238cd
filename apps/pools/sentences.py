"""Sentences of the framework-free modules (memory.py, placement.py, costing.py,
proposals.py, hours.py), translatable without importing Django.

Those modules build English text; the pages show it in the reader's language. A
``Sentence`` is that English text (a plain ``str`` for every caller and test) that also
keeps its msgid and the values put into it, so ``apps.pools.texts.translated`` can
rebuild it from the catalogue at render time. ``gettext_noop`` marks a msgid for
``makemessages`` (xgettext knows the keyword) and returns it unchanged.
"""


def gettext_noop(msgid: str) -> str:
    return msgid


class Sentence(str):
    msgid: str
    values: dict

    def __new__(cls, msgid: str, **values):
        sentence = super().__new__(cls, msgid % values if values else msgid)
        sentence.msgid, sentence.values = msgid, values
        return sentence


def sentence(msgid: str, **values) -> Sentence:
    """``msgid % values``, remembering both."""
    return Sentence(msgid, **values)
