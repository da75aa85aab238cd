"""Parameter counts from a decoder-only transformer's shape (framework-free).

The counting follows the Llama-style decoder that Llama 2, Llama 3/3.1, Qwen2.5, Mistral 7B
and Mixtral share; each paper describes the block and each Hugging Face ``config.json``
gives the sizes:

- Llama 2: Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned Chat Models",
  arXiv 2307.09288 (pre-normalisation with RMSNorm, SwiGLU, rotary embeddings, grouped-query
  attention for 70B).
- Llama 3 / 3.1: Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783
  (Table 3: layers, model dimension, FFN dimension, heads, KV heads, vocabulary 128,256).
- Qwen2.5: Qwen Team 2024, "Qwen2.5 Technical Report", arXiv 2412.15115 (same block with
  a bias on the Q/K/V projections; untied embeddings for 7B and up).
- Mistral 7B: Jiang et al. 2023, arXiv 2310.06825 (Table 1; sliding-window attention adds
  no parameters).
- Mixtral of Experts: Jiang et al. 2024, arXiv 2401.04088 (each layer's MLP replaced by 8
  SwiGLU experts and a linear router; 2 experts per token).

What is counted (h = hidden_size, f = intermediate_size, V = vocab_size, E = experts):

- token embedding: V·h
- per layer, attention: q h·(heads·head_dim), k and v h·(kv_heads·head_dim) each,
  o (heads·head_dim)·h, plus heads·head_dim + 2·kv_heads·head_dim biases when ``qkv_bias``
- per layer, MLP: 3·h·f per expert (gate, up and down projections) × E
- per layer, router: h·E when E > 1 (a bias-free linear gate, as in Mixtral)
- per layer, norms: 2·h (RMSNorm has one weight vector and no bias)
- final norm: h
- output head: V·h unless the embeddings are tied

Rotary position embeddings have no parameters. *Active* parameters are the same sum with
only ``experts_per_token`` experts' MLPs per layer (the router is always evaluated); for a
dense model active equals total.
"""

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ArchitectureShape:
    layers: int
    hidden_size: int
    intermediate_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    experts: int = 1
    experts_per_token: int = 1
    tied_embeddings: bool = False
    qkv_bias: bool = False


@dataclass(frozen=True)
class ParameterCounts:
    """Parameter counts by part; ``total`` and ``active`` are what callers usually want.

    ``per_layer_mlp`` covers all experts of one layer, ``per_layer_active_mlp`` only the
    ``experts_per_token`` experts a token passes through.
    """

    total: int
    active: int
    embedding: int
    per_layer_attention: int
    per_layer_mlp: int
    per_layer_active_mlp: int
    per_layer_router: int
    per_layer_norms: int
    final_norm: int
    output_head: int
    layers: int

    @property
    def per_layer(self) -> int:
        return (
            self.per_layer_attention
            + self.per_layer_mlp
            + self.per_layer_router
            + self.per_layer_norms
        )

    @property
    def non_embedding(self) -> int:
        """Total without the token embedding and output head (the figure Qwen cards quote)."""
        return self.total - self.embedding - self.output_head


_POSITIVE_INTEGER_FIELDS = (
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


def validate_shape(shape: ArchitectureShape) -> None:
    """Raise ValueError naming the first field that cannot describe a real model."""
    for name in _POSITIVE_INTEGER_FIELDS:
        value = getattr(shape, name)
        # bool is an int subclass; True as a layer count is a bug, not a 1.
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if shape.attention_heads % shape.kv_heads:
        raise ValueError(
            f"kv_heads ({shape.kv_heads}) must divide attention_heads "
            f"({shape.attention_heads}): each KV head serves a whole group of query heads"
        )
    if shape.experts_per_token > shape.experts:
        raise ValueError(
            f"experts_per_token ({shape.experts_per_token}) cannot exceed experts ({shape.experts})"
        )
    for field in fields(shape):
        value = getattr(shape, field.name)
        if field.name not in _POSITIVE_INTEGER_FIELDS and not isinstance(value, bool):
            raise ValueError(f"{field.name} must be true or false, got {value!r}")


def parameter_counts(shape: ArchitectureShape) -> ParameterCounts:
    """Count a Llama-style decoder's parameters, total and active per token.

    See the module docstring for the terms and their sources (Llama 2 arXiv 2307.09288,
    Llama 3 arXiv 2407.21783, Qwen2.5 arXiv 2412.15115, Mistral 7B arXiv 2310.06825,
    Mixtral arXiv 2401.04088). Checked against the Hugging Face safetensors totals, e.g.
    Llama-2-7B: 6,738,415,616 exactly.
    """
    validate_shape(shape)
    hidden = shape.hidden_size
    query_width = shape.attention_heads * shape.head_dim
    key_value_width = shape.kv_heads * shape.head_dim

    attention = (
        hidden * query_width  # q
        + 2 * hidden * key_value_width  # k, v
        + query_width * hidden  # o
    )
    if shape.qkv_bias:
        attention += query_width + 2 * key_value_width

    mlp_per_expert = 3 * hidden * shape.intermediate_size  # gate, up, down
    mlp = mlp_per_expert * shape.experts
    active_mlp = mlp_per_expert * shape.experts_per_token
    router = hidden * shape.experts if shape.experts > 1 else 0
    norms = 2 * hidden

    embedding = shape.vocab_size * hidden
    output_head = 0 if shape.tied_embeddings else shape.vocab_size * hidden
    final_norm = hidden

    outside_layers = embedding + final_norm + output_head
    total = outside_layers + shape.layers * (attention + mlp + router + norms)
    active = outside_layers + shape.layers * (attention + active_mlp + router + norms)
    return ParameterCounts(
        total=total,
        active=active,
        embedding=embedding,
        per_layer_attention=attention,
        per_layer_mlp=mlp,
        per_layer_active_mlp=active_mlp,
        per_layer_router=router,
        per_layer_norms=norms,
        final_norm=final_norm,
        output_head=output_head,
        layers=shape.layers,
    )
