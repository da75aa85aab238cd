"""A CSV's column mapping — our field name → the file's header name — checked against
the fields an import knows and against the file's header line. The telemetry and the
training imports read CSVs through it, so their refusals say the same things."""

from apps.core.sentences import gettext_noop, sentence


def describe_headers(header: list[str], limit: int = 40) -> str:
    """The header names as a refusal lists them, the first ``limit`` of a wide file."""
    shown = ", ".join(repr(name) for name in header[:limit])
    if len(header) > limit:
        shown = sentence(
            gettext_noop("%(shown)s, … (%(count)s in all)"), shown=shown, count=len(header)
        )
    return shown


def check_mapping(
    columns: dict[str, str], *, known: tuple[str, ...], required: tuple[str, ...], error
) -> None:
    """Raise ``error`` (an exception class taking a Sentence) when the mapping names a
    field the import does not know or leaves out a required one."""
    unknown = [field for field in columns if field not in known]
    if unknown:
        raise error(
            sentence(
                gettext_noop(
                    "unknown field(s) in the column mapping: %(unknown)s; known fields: %(known)s"
                ),
                unknown=", ".join(map(repr, unknown)),
                known=", ".join(known),
            )
        )
    absent = [field for field in required if not columns.get(field)]
    if absent:
        raise error(
            sentence(
                gettext_noop("the column mapping lacks %(absent)s (required: %(required)s)"),
                absent=", ".join(map(repr, absent)),
                required=", ".join(required),
            )
        )


def column_positions(header: list[str], columns: dict[str, str], *, error) -> dict[str, int]:
    """Field name → cell position in the header line (the first of equal names); raise
    ``error`` naming line 1, the unmatched mappings and the headers the file has."""
    position = {name: index for index, name in reversed(list(enumerate(header)))}
    missing = [
        f"{field}={header_name!r}"
        for field, header_name in columns.items()
        if header_name.strip() not in position
    ]
    if missing:
        raise error(
            sentence(
                gettext_noop("line %(line)s: %(problem)s"),
                line=1,
                problem=sentence(
                    gettext_noop(
                        "the file has no column named as mapped in %(missing)s; "
                        "headers found: %(headers)s"
                    ),
                    missing=", ".join(missing),
                    headers=describe_headers(header),
                ),
            )
        )
    return {field: position[header_name.strip()] for field, header_name in columns.items()}


def resolve_columns(
    header: list[str],
    columns: dict[str, str],
    *,
    known: tuple[str, ...],
    required: tuple[str, ...],
    error,
) -> dict[str, int]:
    """``check_mapping`` then ``column_positions``."""
    check_mapping(columns, known=known, required=required, error=error)
    return column_positions(header, columns, error=error)
