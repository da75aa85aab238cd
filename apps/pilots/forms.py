from django import forms
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import GpuModel
from apps.core.forms import TablerFormMixin
from apps.pilots.models import SourceFormat
from apps.pilots.services import MAX_FILE_BYTES


class PilotUploadForm(TablerFormMixin, forms.Form):
    """A benchmark result file and what the file does not say: the GPUs that served it."""

    file = forms.FileField(
        label=_("Result file"),
        help_text=_(
            "mlperf_log_summary.txt, vLLM's result JSON, GenAI-Perf's profile_export JSON or "
            "CSV, or GuideLLM's benchmarks.json."
        ),
    )
    source_format = forms.ChoiceField(label=_("Format"), choices=SourceFormat.choices)
    gpu_model = forms.ModelChoiceField(
        label=_("GPU model"), queryset=GpuModel.objects.order_by("name"), to_field_name="slug"
    )
    gpu_count = forms.IntegerField(
        label=_("GPUs"), min_value=1, max_value=100_000, help_text=_("GPUs serving the run.")
    )
    name = forms.CharField(
        label=_("Configuration"),
        max_length=200,
        required=False,
        help_text=_("e.g. “TP 4, FP8, max 64 concurrent”; empty: the file's name."),
    )
    concurrency = forms.IntegerField(
        label=_("Concurrency"),
        min_value=1,
        max_value=1_000_000,
        required=False,
        help_text=_("Concurrent requests in flight; empty: what the file says, if anything."),
    )
    benchmark_number = forms.IntegerField(
        label=_("Benchmark in the file"),
        min_value=1,
        max_value=10_000,
        required=False,
        help_text=_("GuideLLM sweeps hold several benchmarks: which one, from 1."),
    )
    notes = forms.CharField(
        label=_("Notes"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(self, *args, workload=None, **kwargs):
        super().__init__(*args, **kwargs)
        if workload is not None and not self.is_bound:
            self.fields["gpu_model"].initial = workload.pool.gpu_model.slug
            self.fields["gpu_count"].initial = workload.gpu_count

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError(
                _("The file has %(size)s bytes: at most %(limit)s are read."),
                params={"size": upload.size, "limit": MAX_FILE_BYTES},
            )
        return upload
