"""``manage.py import_benchmark FILE --format mlperf|vllm|genai-perf|guidellm --workload SLUG
--gpu-model SLUG --gpus N [--name NAME] [--concurrency N] [--benchmark N]``

Prints the stored figures; exits non-zero, storing nothing, when the file is refused.
Importing the same file again for the same workload changes nothing and says so.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.catalog.models import GpuModel
from apps.pilots import services
from apps.pilots.parsers import FORMATS, BenchmarkFormatError
from apps.pools.models import Workload


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


class Command(BaseCommand):
    help = "Import a measured inference benchmark (MLPerf, vLLM, GenAI-Perf, GuideLLM)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--workload", required=True, help="The workload's slug.")
        parser.add_argument("--gpu-model", required=True, help="The GPU model's slug.")
        parser.add_argument("--gpus", required=True, type=_positive, help="GPUs serving the run.")
        parser.add_argument("--name", default="", help="The configuration; default: the file.")
        parser.add_argument("--notes", default="")
        parser.add_argument("--concurrency", type=_positive, default=None)
        parser.add_argument(
            "--benchmark", type=_positive, default=None, help="GuideLLM: which benchmark, from 1."
        )

    def handle(self, *args, **options):
        workload = Workload.objects.select_related("pool").filter(slug=options["workload"]).first()
        if workload is None:
            raise CommandError(f"--workload: no workload with slug “{options['workload']}”")
        gpu_model = GpuModel.objects.filter(slug=options["gpu_model"]).first()
        if gpu_model is None:
            raise CommandError(f"--gpu-model: no GPU model with slug “{options['gpu_model']}”")
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{options['file']}: no such file")
        try:
            outcome = services.import_benchmark(
                workload=workload,
                gpu_model=gpu_model,
                gpu_count=options["gpus"],
                source_format=options["format"],
                content=path.read_bytes(),
                filename=path.name,
                name=options["name"],
                notes=options["notes"],
                concurrency=options["concurrency"],
                benchmark_number=options["benchmark"],
            )
        except BenchmarkFormatError as error:
            raise CommandError(f"{options['file']}: {error}") from error
        result = outcome.result
        if not outcome.created:
            self.stdout.write(
                f"already imported as pilot result {result.pk} “{result.name}”: nothing changed"
            )
            return
        self.stdout.write(
            f"pilot result {result.pk} “{result.name}”: "
            f"{result.output_tokens_per_second:,.2f} output tokens/s on {result.gpu_count} × "
            f"{gpu_model.name} ({result.output_tokens_per_second_per_gpu:,.2f} per GPU)"
        )
