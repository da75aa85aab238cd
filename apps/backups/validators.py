"""Input rules shared by the forms and the API serializers, with messages a person can act on."""

import re

from django.core.exceptions import ValidationError
from django.utils.translation import gettext

# Hex digits per algorithm: a checksum of another length was cut short or is another hash.
CHECKSUM_HEX_LENGTHS = {
    "sha256": 64,
    "sha512": 128,
    "sha1": 40,
    "md5": 32,
    "blake2b-256": 64,
    "xxh64": 16,
    "crc32c": 8,
}
HEX_RE = re.compile(r"[0-9a-f]+")
# 2024-06-01, 2024_06_01, 20240601, 2024-06-01T12:00, 2024.06.01-1200, v20240601 …
DATE_ONLY_RE = re.compile(
    r"(?:v|ckpt|backup|release|snapshot)?[-_. ]?"
    r"(?:19|20)\d{2}[-_./]?[01]\d[-_./]?[0-3]\d"
    r"(?:[-_.t ]?[0-2]\d(?:[-_.:]?[0-5]\d){0,2}z?)?",
    re.IGNORECASE,
)
CONFIG_HASH_RE = re.compile(r"[0-9a-f]{7,64}")


def is_date_only(text: str) -> bool:
    """True for a name that says when, not what: "2024-06-01", "ckpt-20240601-1200"."""
    return bool(DATE_ONLY_RE.fullmatch(text.strip()))


def validate_not_date_only(value: str):
    if is_date_only(value):
        raise ValidationError(
            gettext(
                "“%(value)s” is only a date: a version must say what it is. Give the model "
                "(e.g. llama-3-70b); the name adds data version, precision and config hash."
            )
            % {"value": value},
            code="date_only",
        )
    if not re.search(r"[a-zA-Z]", value):
        raise ValidationError(
            gettext("“%(value)s” has no letters: give the model's name, e.g. llama-3-70b.")
            % {"value": value},
            code="no_letters",
        )


def validate_config_hash(value: str):
    if not CONFIG_HASH_RE.fullmatch(value):
        raise ValidationError(
            gettext(
                "“%(value)s” is not a config hash: 7 to 64 lowercase hex digits (0-9, a-f), "
                "e.g. the first 12 of the config file's sha256."
            )
            % {"value": value},
            code="config_hash",
        )


def checksum_error(checksum: str, algorithm: str) -> str | None:
    """Why a checksum cannot be of this algorithm, or None when it can."""
    expected = CHECKSUM_HEX_LENGTHS.get(algorithm)
    if expected is None:
        return gettext("Unknown checksum algorithm “%(algorithm)s”.") % {"algorithm": algorithm}
    if not HEX_RE.fullmatch(checksum):
        return gettext(
            "“%(checksum)s” is not hex: a %(algorithm)s checksum is %(expected)s lowercase hex "
            "digits (0-9, a-f)."
        ) % {"checksum": _short(checksum), "algorithm": algorithm, "expected": expected}
    if len(checksum) != expected:
        return gettext(
            "“%(checksum)s” has %(digits)s hex digits; a %(algorithm)s checksum has %(expected)s."
        ) % {
            "checksum": _short(checksum),
            "digits": len(checksum),
            "algorithm": algorithm,
            "expected": expected,
        }
    return None


def _short(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:20]}…"
