"""Storing a measured benchmark: one service that the upload form, the API and the
``import_benchmark`` command all go through."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction

from apps.core.sentences import gettext_noop, sentence
from apps.pilots.models import PilotResult
from apps.pilots.parsers import BenchmarkFormatError, parse_benchmark

# A benchmark summary is a few kB (GuideLLM with its request samples, a few MB).
MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class ImportOutcome:
    result: PilotResult
    created: bool


def content_sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def decode_text(content: bytes) -> str:
    """The file's text, or a BenchmarkFormatError naming the line of the first byte that
    is not UTF-8."""
    if len(content) > MAX_FILE_BYTES:
        raise BenchmarkFormatError(
            sentence(
                gettext_noop("the file has %(size)s bytes: at most %(limit)s are read."),
                size=len(content),
                limit=MAX_FILE_BYTES,
            )
        )
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = content[: error.start].count(b"\n") + 1
        raise BenchmarkFormatError(
            sentence(
                gettext_noop("line %(line)s: byte %(byte)s is not UTF-8: expected a text file."),
                line=line,
                byte=error.start + 1,
            )
        ) from error


def default_name(filename: str, source_format: str, gpu_count: int, gpu_model) -> str:
    stem = Path(filename).stem if filename else source_format
    return f"{stem} · {gpu_count} × {gpu_model.name}"[:200]


def import_benchmark(
    *,
    workload,
    gpu_model,
    gpu_count: int,
    source_format: str,
    content: bytes,
    filename: str = "",
    name: str = "",
    notes: str = "",
    concurrency: int | None = None,
    benchmark_number: int | None = None,
    user=None,
) -> ImportOutcome:
    """Parse ``content`` whole, then store one PilotResult, or nothing.

    The same file imported again for the same workload returns the stored result
    unchanged (``created`` False). A file that does not parse raises
    BenchmarkFormatError before anything is written. ``concurrency`` overrides what the
    file says (most load generators record it only in their command line).
    """
    if gpu_count < 1:
        raise BenchmarkFormatError(
            sentence(gettext_noop("GPUs: %(gpus)s: expected 1 or more."), gpus=gpu_count)
        )
    digest = content_sha256(content)
    earlier = PilotResult.objects.filter(workload=workload, content_sha256=digest).first()
    if earlier is not None:
        return ImportOutcome(earlier, created=False)
    parsed = parse_benchmark(decode_text(content), source_format, benchmark_number=benchmark_number)
    result = PilotResult(
        workload=workload,
        gpu_model=gpu_model,
        gpu_count=gpu_count,
        name=name.strip() or default_name(filename, source_format, gpu_count, gpu_model),
        notes=notes,
        concurrency=concurrency or parsed.concurrency,
        input_tokens_per_request=parsed.input_tokens_per_request,
        output_tokens_per_request=parsed.output_tokens_per_request,
        source_format=source_format,
        source_filename=Path(filename).name[:255] if filename else "",
        content_sha256=digest,
        output_tokens_per_second=parsed.output_tokens_per_second,
        requests_per_second=parsed.requests_per_second,
        ttft_p50_ms=parsed.ttft_p50_ms,
        ttft_p99_ms=parsed.ttft_p99_ms,
        itl_p50_ms=parsed.itl_p50_ms,
        itl_p99_ms=parsed.itl_p99_ms,
        raw_figures=parsed.raw_figures,
        imported_by=user if getattr(user, "is_authenticated", False) else None,
    )
    try:
        with transaction.atomic():
            result.save()
    except IntegrityError:
        # The same file imported at the same moment by another request: theirs stands.
        earlier = PilotResult.objects.filter(workload=workload, content_sha256=digest).first()
        if earlier is None:
            raise
        return ImportOutcome(earlier, created=False)
    return ImportOutcome(result, created=True)
