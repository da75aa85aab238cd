"""Load the published GPU and model-architecture catalogs from apps/catalog/data/*.csv.

The loaders take the model class as an argument so the data migration can pass its
historical model (``apps.get_model``) and ``seed_demo`` the current one. Rows are upserted
by slug, so running a loader again changes nothing; a bad cell raises ValueError naming
the file, line and column, and nothing from that file is saved.
"""

import csv
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.db import transaction

from apps.catalog.architecture import ArchitectureShape, validate_shape

DATA_DIR = Path(__file__).resolve().parent / "data"
GPU_MODELS_CSV = DATA_DIR / "gpu_models.csv"
MODEL_ARCHITECTURES_CSV = DATA_DIR / "model_architectures.csv"

GPU_MODEL_COLUMNS = (
    "name",
    "slug",
    "vendor",
    "memory_gb",
    "memory_type",
    "memory_bandwidth_gb_per_second",
    "bf16_dense_tflops",
    "fp16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "tdp_watts",
    "interconnect",
    "interconnect_gb_per_second",
    "mig_support",
    "mig_compute_slices",
    "reference_price_per_gpu_hour_usd",
    "source_note",
)
MODEL_ARCHITECTURE_COLUMNS = (
    "name",
    "slug",
    "family",
    "layers",
    "hidden_size",
    "intermediate_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "vocab_size",
    "max_context",
    "experts",
    "experts_per_token",
    "tied_embeddings",
    "qkv_bias",
    "published_params",
    "source_note",
)

_GPU_REQUIRED_DECIMALS = ("memory_gb", "memory_bandwidth_gb_per_second")
_GPU_OPTIONAL_DECIMALS = (
    "bf16_dense_tflops",
    "fp16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "interconnect_gb_per_second",
    "reference_price_per_gpu_hour_usd",
)
_ARCHITECTURE_INTEGERS = (
    "layers",
    "hidden_size",
    "intermediate_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "vocab_size",
    "max_context",
    "experts",
    "experts_per_token",
)


class _Row:
    """One CSV line with converters that name the file, line and column on a bad value."""

    def __init__(self, path: Path, line_number: int, cells: dict[str, str]):
        self.path = path
        self.line_number = line_number
        self.cells = cells

    def error(self, column: str, expected: str) -> ValueError:
        value = self.cells.get(column)
        return ValueError(
            f"{self.path.name} line {self.line_number}, column {column}: "
            f"expected {expected}, got {value!r}"
        )

    def text(self, column: str) -> str:
        return self.cells[column].strip()

    def decimal(self, column: str, *, required: bool) -> Decimal | None:
        raw = self.text(column)
        if raw == "":
            if required:
                raise self.error(column, "a number")
            return None
        try:
            return Decimal(raw)
        except InvalidOperation:
            raise self.error(column, "a number or an empty cell") from None

    def integer(self, column: str, *, required: bool = True) -> int | None:
        raw = self.text(column)
        if raw == "" and not required:
            return None
        try:
            return int(raw)
        except ValueError:
            raise self.error(column, "a whole number") from None

    def boolean(self, column: str) -> bool:
        raw = self.text(column).lower()
        if raw not in ("true", "false"):
            raise self.error(column, '"true" or "false"')
        return raw == "true"


def _read_rows(path: Path, expected_columns: tuple[str, ...]) -> list[_Row]:
    with path.open(newline="", encoding="utf-8") as csv_file:
        reader = csv.DictReader(csv_file)
        header = tuple(reader.fieldnames or ())
        if header != expected_columns:
            missing = [column for column in expected_columns if column not in header]
            unexpected = [column for column in header if column not in expected_columns]
            raise ValueError(
                f"{path.name}: header must be {','.join(expected_columns)}; "
                f"missing {missing or 'none'}, unexpected {unexpected or 'none'}"
            )
        # DictReader starts at line 2 (after the header); quoted newlines are not used.
        return [_Row(path, reader.line_num, cells) for cells in reader]


def _gpu_model_defaults(row: _Row) -> dict:
    defaults = {
        "name": row.text("name"),
        "vendor": row.text("vendor"),
        "memory_type": row.text("memory_type"),
        "tdp_watts": row.integer("tdp_watts"),
        "interconnect": row.text("interconnect"),
        "mig_support": row.boolean("mig_support"),
        "mig_compute_slices": row.integer("mig_compute_slices", required=False),
        "source_note": row.text("source_note"),
    }
    for column in _GPU_REQUIRED_DECIMALS:
        defaults[column] = row.decimal(column, required=True)
    for column in _GPU_OPTIONAL_DECIMALS:
        defaults[column] = row.decimal(column, required=False)
    return defaults


def _model_architecture_defaults(row: _Row) -> dict:
    defaults = {
        "name": row.text("name"),
        "family": row.text("family"),
        "tied_embeddings": row.boolean("tied_embeddings"),
        "qkv_bias": row.boolean("qkv_bias"),
        "published_params": row.integer("published_params", required=False),
        "source_note": row.text("source_note"),
    }
    for column in _ARCHITECTURE_INTEGERS:
        defaults[column] = row.integer(column)
    shape_fields = ArchitectureShape.__dataclass_fields__
    shape = ArchitectureShape(**{key: defaults[key] for key in shape_fields})
    try:
        validate_shape(shape)
    except ValueError as error:
        raise ValueError(f"{row.path.name} line {row.line_number}: {error}") from None
    return defaults


def _upsert_by_slug(model, rows: list[_Row], build_defaults, overwrite: bool) -> tuple[int, int]:
    # Parse every row before writing any, so a bad line leaves the table untouched. An
    # early migration's historical model lacks the columns added later: they are left out.
    known = {field.name for field in model._meta.get_fields()}
    parsed = [
        (row.text("slug"), {k: v for k, v in build_defaults(row).items() if k in known})
        for row in rows
    ]
    created_count = updated_count = 0
    with transaction.atomic(using=model._default_manager.db):
        for slug, defaults in parsed:
            # overwrite=False only fills in missing rows, keeping a lead's edits.
            write = (
                model._default_manager.update_or_create
                if overwrite
                else (model._default_manager.get_or_create)
            )
            _, created = write(slug=slug, defaults=defaults)
            if created:
                created_count += 1
            else:
                updated_count += 1
    return created_count, updated_count


def load_gpu_models(
    gpu_model_class, path: Path = GPU_MODELS_CSV, *, overwrite: bool = True
) -> tuple[int, int]:
    """Upsert every row of gpu_models.csv by slug; return (created, updated) counts."""
    rows = _read_rows(path, GPU_MODEL_COLUMNS)
    return _upsert_by_slug(gpu_model_class, rows, _gpu_model_defaults, overwrite)


def load_model_architectures(
    model_architecture_class, path: Path = MODEL_ARCHITECTURES_CSV, *, overwrite: bool = True
) -> tuple[int, int]:
    """Upsert every row of model_architectures.csv by slug; return (created, updated)."""
    rows = _read_rows(path, MODEL_ARCHITECTURE_COLUMNS)
    return _upsert_by_slug(model_architecture_class, rows, _model_architecture_defaults, overwrite)


def fill_mig_compute_slices(gpu_model_class, path: Path = GPU_MODELS_CSV) -> int:
    """Set the MIG compute slices of the catalog's GPUs that have none, from the CSV, and add
    the CSV's GPUs that are missing; a lead's own figures are kept. Returns rows changed."""
    load_gpu_models(gpu_model_class, path, overwrite=False)
    changed = 0
    for row in _read_rows(path, GPU_MODEL_COLUMNS):
        slices = row.integer("mig_compute_slices", required=False)
        if slices is not None:
            changed += gpu_model_class._default_manager.filter(
                slug=row.text("slug"), mig_compute_slices__isnull=True
            ).update(mig_compute_slices=slices)
    return changed
