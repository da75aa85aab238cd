from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from apps.pilots import costing, parsers
from apps.pools.querysets import workload_scope_filter


class SourceFormat(models.TextChoices):
    MLPERF = parsers.MLPERF, _("MLPerf Inference (mlperf_log_summary.txt)")
    VLLM = parsers.VLLM, _("vLLM benchmark_serving (result JSON)")
    GENAI_PERF = parsers.GENAI_PERF, _("GenAI-Perf (profile_export JSON or CSV)")
    GUIDELLM = parsers.GUIDELLM, _("GuideLLM (benchmarks.json)")


class PilotResultQuerySet(models.QuerySet):
    def in_scope(self, scope):
        """Results of the workloads in scope (apps/pools/querysets.py): a workload's
        pilots are seen, and refused, as the workload is."""
        return self.filter(workload_scope_filter(scope, "workload__"))


class PilotResult(models.Model):
    """One measured load test of a workload on a GPU model in one configuration.

    The figures are the file's, converted to the units their names carry; ``raw_figures``
    keeps the file's own names and values. A file is stored once per workload: its
    SHA-256 makes importing it again a no-op.
    """

    workload = models.ForeignKey(
        "pools.Workload",
        on_delete=models.CASCADE,
        related_name="pilot_results",
        verbose_name=_("workload"),
    )
    gpu_model = models.ForeignKey(
        "catalog.GpuModel",
        on_delete=models.PROTECT,
        related_name="pilot_results",
        verbose_name=_("GPU model"),
    )
    name = models.CharField(
        _("configuration"),
        max_length=200,
        help_text=_("What was measured, e.g. “TP 4, FP8, max 64 concurrent”."),
    )
    notes = models.TextField(_("notes"), blank=True)
    gpu_count = models.PositiveIntegerField(
        _("GPUs"), validators=[MinValueValidator(1)], help_text=_("GPUs serving the run.")
    )
    concurrency = models.PositiveIntegerField(
        _("concurrency"),
        null=True,
        blank=True,
        help_text=_("Concurrent requests the load generator kept in flight, when it capped them."),
    )
    # What the file says of its requests: with the concurrency, the settings the decode
    # ceiling beside this result is computed at (apps/pilots/selectors.py).
    input_tokens_per_request = models.FloatField(
        _("input tokens per request"),
        null=True,
        blank=True,
        help_text=_("Mean prompt tokens of the run's requests, as the file gives them."),
    )
    output_tokens_per_request = models.FloatField(
        _("output tokens per request"),
        null=True,
        blank=True,
        help_text=_("Mean generated tokens of the run's requests, as the file gives them."),
    )
    source_format = models.CharField(_("format"), max_length=20, choices=SourceFormat.choices)
    source_filename = models.CharField(_("file"), max_length=255, blank=True)
    content_sha256 = models.CharField(_("file SHA-256"), max_length=64)
    output_tokens_per_second = models.FloatField(_("output tokens/s"))
    requests_per_second = models.FloatField(_("requests/s"), null=True, blank=True)
    ttft_p50_ms = models.FloatField(_("TTFT p50 (ms)"), null=True, blank=True)
    ttft_p99_ms = models.FloatField(_("TTFT p99 (ms)"), null=True, blank=True)
    itl_p50_ms = models.FloatField(_("ITL p50 (ms)"), null=True, blank=True)
    itl_p99_ms = models.FloatField(_("ITL p99 (ms)"), null=True, blank=True)
    raw_figures = models.JSONField(_("figures as the file printed them"), default=dict)
    imported_at = models.DateTimeField(_("imported at"), auto_now_add=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("imported by"),
    )

    objects = PilotResultQuerySet.as_manager()

    class Meta:
        ordering = ["workload", "gpu_model", "name"]
        verbose_name = _("pilot result")
        verbose_name_plural = _("pilot results")
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "content_sha256"], name="pilot_result_file_once_per_workload"
            ),
            models.CheckConstraint(
                condition=models.Q(gpu_count__gte=1), name="pilot_result_gpu_count_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(output_tokens_per_second__gt=0),
                name="pilot_result_throughput_positive",
            ),
        ]

    def __str__(self):
        return f"{self.workload} · {self.gpu_model} · {self.name}"

    def get_absolute_url(self):
        return reverse("pilots:pilot_list", kwargs={"slug": self.workload.slug})

    @property
    def output_tokens_per_second_per_gpu(self) -> float:
        return costing.output_tokens_per_second_per_gpu(
            output_tokens_per_second=self.output_tokens_per_second, gpu_count=self.gpu_count
        )
