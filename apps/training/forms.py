import json

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.core.forms import TablerFormMixin
from apps.training.models import TrainingImportRun

# An upload larger than this is refused before it is read: split the log.
MAX_UPLOAD_BYTES = 20 * 1024 * 1024


class TrainingEventImportForm(TablerFormMixin, forms.Form):
    format = forms.ChoiceField(
        label=_("Format"),
        choices=TrainingImportRun.Format.choices,
        initial=TrainingImportRun.Format.JSONL,
    )
    file = forms.FileField(
        label=_("Event log"),
        help_text=_("goodput_measure's JSON-lines log (one event per line), or a CSV."),
    )
    columns = forms.CharField(
        label=_("CSV column mapping"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_(
            'CSV only, JSON: our field → your header, e.g. {"timestamp": "time", '
            '"job_name": "job", "event_type": "event", "step": "step"}. Fields: timestamp, '
            "job_name, event_type (required), step, node_rank, duration_seconds."
        ),
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _("The file holds %(size)s bytes; at most %(limit)s are read: split the log."),
                params={"size": f"{upload.size:,}", "limit": f"{MAX_UPLOAD_BYTES:,}"},
            )
        try:
            return upload.name, upload.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(
                _("The file is not UTF-8 text (byte %(byte)s)."),
                params={"byte": f"{error.start:,}"},
            ) from None

    def clean_columns(self):
        text = self.cleaned_data["columns"].strip()
        if not text:
            return {}
        try:
            columns = json.loads(text)
        except json.JSONDecodeError as error:
            raise forms.ValidationError(
                _("Not JSON (%(reason)s): an object of field → header expected."),
                params={"reason": error.msg},
            ) from None
        if not isinstance(columns, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in columns.items()
        ):
            raise forms.ValidationError(_("An object of field → header names expected."))
        return columns

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("format") == TrainingImportRun.Format.CSV and not cleaned.get("columns"):
            self.add_error("columns", _("A CSV needs its column mapping."))
        return cleaned
