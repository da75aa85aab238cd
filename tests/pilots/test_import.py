"""One service stores a result: whole or not at all, once per file and workload; the
command goes through it."""

import pytest
from django.core.management import CommandError, call_command

from apps.pilots.models import PilotResult
from apps.pilots.parsers import BenchmarkFormatError
from apps.pilots.services import import_benchmark
from tests.factories import seeded_gpu_model


def _import(workload, content, source_format="vllm", **options):
    return import_benchmark(
        workload=workload,
        gpu_model=options.pop("gpu_model", None) or seeded_gpu_model("l40s"),
        gpu_count=options.pop("gpu_count", 4),
        source_format=source_format,
        content=content,
        filename=options.pop("filename", "result.json"),
        **options,
    )


@pytest.mark.django_db
def test_a_result_is_stored_with_its_figures_and_per_gpu_throughput(workload, sample):
    outcome = _import(workload, sample("vllm"), name="kvcache, rate inf")
    assert outcome.created
    result = PilotResult.objects.get()
    assert result.name == "kvcache, rate inf"
    assert result.gpu_count == 4
    assert result.output_tokens_per_second == 11011.349280220396
    # 11011.349280220396 tokens/s ÷ 4 GPUs
    assert result.output_tokens_per_second_per_gpu == pytest.approx(2752.837320055099)
    assert result.raw_figures["output_throughput"] == 11011.349280220396
    assert len(result.content_sha256) == 64


@pytest.mark.django_db
def test_importing_the_same_file_again_changes_nothing(workload, sample):
    first = _import(workload, sample("vllm"))
    again = _import(workload, sample("vllm"), name="another name", gpu_count=8)
    assert not again.created
    assert again.result.pk == first.result.pk
    stored = PilotResult.objects.get()
    assert (stored.name, stored.gpu_count) == (first.result.name, 4)


@pytest.mark.django_db
def test_a_bad_file_stores_nothing(workload):
    with pytest.raises(BenchmarkFormatError, match="key “output_throughput” is missing"):
        _import(workload, b'{"request_throughput": 2.0}')
    with pytest.raises(BenchmarkFormatError, match="line 1: byte 2 is not UTF-8"):
        _import(workload, b"{\xff}")
    with pytest.raises(BenchmarkFormatError, match="GPUs: 0: expected 1 or more"):
        _import(workload, b"{}", gpu_count=0)
    assert not PilotResult.objects.exists()


@pytest.mark.django_db
def test_the_command_imports_and_a_second_run_changes_nothing(workload, sample, capsys):
    path = str(sample.path("mlperf"))
    arguments = [
        path,
        "--format=mlperf",
        f"--workload={workload.slug}",
        "--gpu-model=mi300x",
        "--gpus=8",
        "--name=MLPerf v4.1 Server",
    ]
    call_command("import_benchmark", *arguments)
    assert "21,028.23 output tokens/s on 8 × MI300X (2,628.53 per GPU)" in capsys.readouterr().out
    call_command("import_benchmark", *arguments)
    assert "nothing changed" in capsys.readouterr().out
    result = PilotResult.objects.get()
    assert (result.name, result.gpu_model.slug, result.source_format) == (
        "MLPerf v4.1 Server",
        "mi300x",
        "mlperf",
    )


@pytest.mark.django_db
def test_the_command_refuses_a_bad_file_naming_the_reason(workload, sample, tmp_path):
    bad = tmp_path / "summary.txt"
    bad.write_text("MLPerf Results Summary\nCompleted tokens per second: ?\n")
    with pytest.raises(CommandError, match="line 2: “Completed tokens per second” is “\\?”"):
        call_command(
            "import_benchmark",
            str(bad),
            "--format=mlperf",
            f"--workload={workload.slug}",
            "--gpu-model=h100-sxm",
            "--gpus=8",
        )
    with pytest.raises(CommandError, match="--gpu-model: no GPU model with slug “nope”"):
        call_command(
            "import_benchmark",
            str(sample.path("vllm")),
            "--format=vllm",
            f"--workload={workload.slug}",
            "--gpu-model=nope",
            "--gpus=1",
        )
    assert not PilotResult.objects.exists()
