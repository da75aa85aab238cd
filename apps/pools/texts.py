"""The reader's language for the sentences of the framework-free modules
(apps/pools/sentences.py): each is rebuilt from the catalogue when a page shows it."""

from django.utils.translation import gettext


def translated(text):
    """``text`` in the active language: a ``Sentence`` from its msgid and values, a
    message carried by an exception (whose ``str()`` drops the ``Sentence``) the same
    way; anything else unchanged."""
    if isinstance(text, BaseException):
        text = text.args[0] if len(text.args) == 1 else str(text)
    msgid = getattr(text, "msgid", None)
    if msgid is None:
        return text
    values = text.values
    return gettext(msgid) % values if values else gettext(msgid)
