"""Parameter counts from shapes, checked against the published counts (no database)."""

import csv
import dataclasses
from pathlib import Path

import pytest

from apps.catalog.architecture import ArchitectureShape, parameter_counts

ARCHITECTURES_CSV = (
    Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "model_architectures.csv"
)
SHAPE_INTEGER_FIELDS = (
    "layers",
    "hidden_size",
    "intermediate_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "vocab_size",
    "experts",
    "experts_per_token",
)


def _read_architectures() -> list[dict[str, str]]:
    with ARCHITECTURES_CSV.open(newline="", encoding="utf-8") as csv_file:
        return list(csv.DictReader(csv_file))


def _shape(row: dict[str, str]) -> ArchitectureShape:
    return ArchitectureShape(
        **{name: int(row[name]) for name in SHAPE_INTEGER_FIELDS},
        tied_embeddings=row["tied_embeddings"] == "true",
        qkv_bias=row["qkv_bias"] == "true",
    )


ARCHITECTURES = _read_architectures()
LLAMA_2_7B = ArchitectureShape(
    layers=32,
    hidden_size=4096,
    intermediate_size=11008,
    attention_heads=32,
    kv_heads=32,
    head_dim=128,
    vocab_size=32000,
)
MIXTRAL_8X7B = ArchitectureShape(
    layers=32,
    hidden_size=4096,
    intermediate_size=14336,
    attention_heads=32,
    kv_heads=8,
    head_dim=128,
    vocab_size=32000,
    experts=8,
    experts_per_token=2,
)


@pytest.mark.parametrize("row", ARCHITECTURES, ids=[row["name"] for row in ARCHITECTURES])
def test_total_is_within_one_percent_of_published(row):
    published = int(row["published_params"])
    total = parameter_counts(_shape(row)).total
    assert abs(total - published) / published < 0.01, (total, published)


def test_dense_models_have_active_equal_to_total():
    for row in ARCHITECTURES:
        counts = parameter_counts(_shape(row))
        if int(row["experts"]) == 1:
            assert counts.active == counts.total, row["name"]


def test_mixtral_active_is_within_one_percent_of_the_cards_12_9_billion():
    active = parameter_counts(MIXTRAL_8X7B).active
    assert abs(active - 12.9e9) / 12.9e9 < 0.01, active


def test_mixtral_counts_the_router_in_both_total_and_active():
    counts = parameter_counts(MIXTRAL_8X7B)
    assert counts.per_layer_router == 4096 * 8
    # Total minus active is exactly the six experts a token skips in each of 32 layers.
    assert counts.total - counts.active == 32 * 6 * (3 * 4096 * 14336)


def test_llama_2_7b_term_by_term():
    hidden, layers, vocab, intermediate = 4096, 32, 32000, 11008
    embedding = vocab * hidden  # 32000·4096
    q = hidden * (32 * 128)
    k = hidden * (32 * 128)  # no grouped-query attention at 7B: 32 KV heads
    v = hidden * (32 * 128)
    o = (32 * 128) * hidden
    gate = hidden * intermediate
    up = hidden * intermediate
    down = intermediate * hidden
    norms = 2 * hidden  # input and post-attention RMSNorm
    per_layer = q + k + v + o + gate + up + down + norms
    final_norm = hidden
    output_head = vocab * hidden  # untied
    expected = embedding + layers * per_layer + final_norm + output_head
    assert expected == 6_738_415_616  # Hugging Face safetensors total of Llama-2-7b-hf

    counts = parameter_counts(LLAMA_2_7B)
    assert counts.total == expected
    assert counts.embedding == embedding
    assert counts.per_layer_attention == q + k + v + o
    assert counts.per_layer_mlp == gate + up + down
    assert counts.per_layer_norms == norms
    assert counts.output_head == output_head
    assert counts.per_layer == per_layer


def test_qkv_bias_adds_one_bias_per_projected_width():
    without = parameter_counts(dataclasses.replace(LLAMA_2_7B, kv_heads=8))
    with_bias = parameter_counts(dataclasses.replace(LLAMA_2_7B, kv_heads=8, qkv_bias=True))
    assert with_bias.per_layer_attention - without.per_layer_attention == 32 * 128 + 2 * 8 * 128


def test_tied_embeddings_drop_the_output_head():
    tied = parameter_counts(dataclasses.replace(LLAMA_2_7B, tied_embeddings=True))
    assert tied.output_head == 0
    assert parameter_counts(LLAMA_2_7B).total - tied.total == 32000 * 4096


@pytest.mark.parametrize(
    ("changes", "field_named"),
    [
        ({"layers": 0}, "layers"),
        ({"hidden_size": -4096}, "hidden_size"),
        ({"intermediate_size": 0}, "intermediate_size"),
        ({"attention_heads": 0}, "attention_heads"),
        ({"kv_heads": 0}, "kv_heads"),
        ({"head_dim": 0}, "head_dim"),
        ({"vocab_size": 0}, "vocab_size"),
        ({"experts": 0}, "experts"),
        ({"experts_per_token": 0}, "experts_per_token"),
        ({"kv_heads": 5}, "kv_heads"),  # 5 does not divide 32
        ({"experts": 8, "experts_per_token": 9}, "experts_per_token"),
        ({"layers": 32.5}, "layers"),
        ({"qkv_bias": "false"}, "qkv_bias"),  # a CSV string is truthy: refuse it
    ],
    ids=lambda value: str(value),
)
def test_invalid_shapes_raise_value_error_naming_the_field(changes, field_named):
    shape = dataclasses.replace(LLAMA_2_7B, **changes)
    with pytest.raises(ValueError, match=rf"\b{field_named}\b"):
        parameter_counts(shape)
