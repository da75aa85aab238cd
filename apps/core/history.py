"""What changed, when and by whom: rows for the history card on detail pages, from
django-simple-history's records (one query for the records and their users)."""

from dataclasses import dataclass, field

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

HISTORY_LIMIT = 10
_ACTIONS = {"+": _("created"), "~": _("changed"), "-": _("deleted")}


@dataclass
class FieldChange:
    label: str
    old: str
    new: str


@dataclass
class HistoryRow:
    when: object
    who: str
    action: str
    changes: list[FieldChange] = field(default_factory=list)


@dataclass
class HistoryEntry(HistoryRow):
    """A row of a history card that gathers several objects' records: what it is about
    (``subject``) and where that object's page is (``url``, empty once it is deleted)."""

    subject: str = ""
    url: str = ""


def _display(record, field_name):
    value = getattr(record, field_name, None)
    if value is None or value == "":
        return "—"
    display = getattr(record, f"get_{field_name}_display", None)
    return str(display()) if callable(display) else str(value)


QUIET_FIELDS = frozenset({"created_at", "updated_at"})


def history_rows(obj, limit=HISTORY_LIMIT) -> list[HistoryRow]:
    """Newest first. Each change is diffed against the record before it."""
    records = list(
        obj.history.select_related("history_user").order_by("-history_date")[: limit + 1]
    )
    return rows_from_records(records, type(obj))[:limit]


def rows_from_records(records, model, quiet=QUIET_FIELDS) -> list[HistoryRow]:
    """Rows of one object's history records, given newest first (users selected), each
    ``~`` record diffed against the next one. The oldest record given is only a base for
    the diff when the caller read one more than it shows.

    All stored fields are compared, the derived ones (editable=False) included: a changed
    effective price is worth seeing. ``quiet`` fields (timestamps that change on every
    save) are not. Fields the model's history excludes (HistoricalRecords(excluded_fields=
    …)) are not on the records."""
    if not records:
        return []
    recorded = {model_field.attname for model_field in type(records[0])._meta.concrete_fields}
    tracked = [
        model_field
        for model_field in model._meta.concrete_fields
        if not model_field.primary_key
        and model_field.name not in quiet
        and model_field.attname in recorded
    ]
    rows = []
    for index, record in enumerate(records):
        user = record.history_user
        row = HistoryRow(
            when=record.history_date,
            who=(user.get_full_name() or user.get_username()) if user else gettext("system"),
            action=str(_ACTIONS.get(record.history_type, record.history_type)),
        )
        previous = records[index + 1] if index + 1 < len(records) else None
        if previous is not None and record.history_type == "~":
            for model_field in tracked:
                if getattr(previous, model_field.attname) == getattr(record, model_field.attname):
                    continue
                label = str(model_field.verbose_name)
                row.changes.append(
                    FieldChange(
                        label=label[:1].upper() + label[1:],
                        old=_display(previous, model_field.name),
                        new=_display(record, model_field.name),
                    )
                )
        rows.append(row)
    return rows


def combined_history(
    sources, *, limit=30, quiet=QUIET_FIELDS, url_of=lambda model, record: ""
) -> list[HistoryEntry]:
    """Changes to several objects, newest first, each diffed against the record before it
    of the same object. ``sources`` are (history queryset, subject(record), model);
    ``url_of(model, record)`` is the object's page, asked only for records that are not
    deletions."""
    entries = []
    for queryset, subject, model in sources:
        records = list(
            queryset.select_related("history_user").order_by("-history_date")[: limit * 2]
        )
        by_object = {}
        for record in records:
            by_object.setdefault(record.id, []).append(record)
        for object_records in by_object.values():
            rows = rows_from_records(object_records, model, quiet=quiet)
            for record, row in zip(object_records, rows, strict=True):
                entries.append(
                    HistoryEntry(
                        when=row.when,
                        who=row.who,
                        action=row.action,
                        changes=row.changes,
                        subject=subject(record),
                        url="" if record.history_type == "-" else url_of(model, record),
                    )
                )
    entries.sort(key=lambda entry: entry.when, reverse=True)
    return entries[:limit]
