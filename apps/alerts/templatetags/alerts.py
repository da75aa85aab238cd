from django import template

register = template.Library()


@register.filter
def destination_for(channel, user) -> str:
    """Where ``channel`` sends, as ``user`` may read it (``AlertChannel.destination_for``)."""
    return channel.destination_for(user)
