from django import template

from apps.core.texts import translated as translated_text

register = template.Library()


@register.filter
def translated(text):
    """A sentence written in English where the work happened (apps/core/sentences.py), in
    the reader's language."""
    return translated_text(text)
