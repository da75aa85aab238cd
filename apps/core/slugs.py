"""Slugs for names in any script: Chinese characters become their pinyin, syllable by
syllable, so "北京推理池" is addressed as ``bei-jing-tui-li-chi`` instead of refusing a name
with no ASCII in it. Polyphonic characters take their reading in the phrase (pypinyin's
phrase dictionary: 还是 → hai-shi, 重庆 → chong-qing), tones are dropped.

A slug derived for a new object is unique: ``-2``, ``-3``… follow it while another object
(or a fixed page address such as ``new``) has it. The pages' forms and the API's
serializers derive it with the same function.
"""

from django.utils.text import slugify


def slug_from_name(name: str, *, max_length: int = 50) -> str:
    """An ASCII slug of ``name``: pinyin for Han characters, Django's ``slugify`` for the
    rest, cut at ``max_length`` on a word boundary where one is near. Empty when nothing
    in the name can be spelt (punctuation only)."""
    if name.isascii():
        slug = slugify(name)
    else:
        # Imported here: its phrase dictionary takes a second or more to load, which every
        # process (web, worker, beat, each command) would otherwise pay at start.
        from pypinyin import lazy_pinyin

        slug = slugify("-".join(lazy_pinyin(name)))
    if len(slug) <= max_length:
        return slug
    cut = slug[:max_length]
    return cut.rsplit("-", 1)[0] if "-" in cut else cut


# Slugs that a page address already uses (``/pools/new/``): never given to an object.
RESERVED_SLUGS = frozenset({"new"})


def unique_slug_from_name(name: str, model, *, max_length: int = 50, exclude_pk=None) -> str:
    """``slug_from_name``, followed by ``-2``, ``-3``… while another ``model`` row (not
    ``exclude_pk``, the object being edited) has it or it is reserved; still at most
    ``max_length``. Empty when nothing in the name can be spelt."""
    base = slug_from_name(name, max_length=max_length)
    if not base:
        return ""
    others = model._default_manager.exclude(pk=exclude_pk) if exclude_pk else model._default_manager
    slug, number = base, 2
    while slug in RESERVED_SLUGS or others.filter(slug=slug).exists():
        suffix = f"-{number}"
        slug = base[: max_length - len(suffix)].rstrip("-") + suffix
        number += 1
    return slug
