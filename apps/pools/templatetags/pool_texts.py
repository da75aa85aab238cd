from django import template

from apps.pools.texts import translated as translated_text

register = template.Library()


@register.filter
def translated(text):
    """A sentence of the fit engine (apps/core/sentences.py) in the reader's language."""
    return translated_text(text)
