"""Slugs for names in any script: Chinese characters become their pinyin, syllable by
syllable, so "北京推理池" is addressed as ``bei-jing-tui-li-chi`` instead of refusing a name
with no ASCII in it. Polyphonic characters take their reading in the phrase (pypinyin's
phrase dictionary: 还是 → hai-shi, 重庆 → chong-qing), tones are dropped."""

from django.utils.text import slugify
from pypinyin import lazy_pinyin


def slug_from_name(name: str, *, max_length: int = 50) -> str:
    """An ASCII slug of ``name``: pinyin for Han characters, Django's ``slugify`` for the
    rest, cut at ``max_length`` on a word boundary where one is near. Empty when nothing
    in the name can be spelt (punctuation only)."""
    slug = slugify("-".join(lazy_pinyin(name)))
    if len(slug) <= max_length:
        return slug
    cut = slug[:max_length]
    return cut.rsplit("-", 1)[0] if "-" in cut else cut
