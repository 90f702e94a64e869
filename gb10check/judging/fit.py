"""Does the model fit a node? The arithmetic of weights, KV cache and recurrent state per node.

Pure: the checkpoint's config.json and size, the TP size and vLLM's flags in, a `Fit` out whose
`lines()` show the arithmetic step by step (an operator must be able to redo it by hand).
"""

from __future__ import annotations

from dataclasses import dataclass

from gb10check.errors import ParseError
from gb10check.reading.parsers import json_object
from gb10check.safe_text.redact import redact

__all__ = ["DTYPE_BYTES", "GIB", "KIB", "MIB", "Fit", "ModelDims", "gib", "parse_model_config", "tp_split_problems"]

GIB = 1024**3
MIB = 1024**2
KIB = 1024
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "auto": 2}


@dataclass(frozen=True)
class ModelDims:
    dtype: str  # torch_dtype of the checkpoint
    quantization: str | None  # quantization_config.quant_method (fp8, ...) or None
    layers: int
    full_attention_layers: int
    kv_heads: int
    head_dim: int
    linear_layers: int  # recurrent (Gated DeltaNet / Mamba-style) layers
    linear_value_heads: int
    linear_key_head_dim: int
    linear_value_head_dim: int
    max_position_embeddings: int | None = None  # vLLM's max_model_len when the command gives none
    attention_heads: int = 0  # num_attention_heads (query heads): TP must divide them

    @property
    def unquantized_16bit(self) -> bool:
        return self.quantization is None and self.dtype in ("bfloat16", "float16")


def parse_model_config(text: str) -> ModelDims:
    """config.json of a transformers checkpoint (hybrid Qwen3-Next style or plain attention)."""
    cfg = json_object(text, "config.json")
    cfg = cfg.get("text_config", cfg) if isinstance(cfg.get("text_config"), dict) else cfg
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads", heads))
        head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError("config.json", f"missing or bad attention dimension: {redact(str(exc))}", text) from exc
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        full = sum(1 for t in layer_types if "full" in str(t) or t == "attention")
    elif cfg.get("full_attention_interval"):
        full = layers // int(cfg["full_attention_interval"])
    else:
        full = layers
    quant = cfg.get("quantization_config") or {}
    return ModelDims(
        dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"),
        quantization=quant.get("quant_method") if isinstance(quant, dict) else None,
        layers=layers,
        full_attention_layers=full,
        kv_heads=kv_heads,
        head_dim=head_dim,
        linear_layers=layers - full,
        linear_value_heads=int(cfg.get("linear_num_value_heads") or 0),
        linear_key_head_dim=int(cfg.get("linear_key_head_dim") or 0),
        linear_value_head_dim=int(cfg.get("linear_value_head_dim") or 0),
        max_position_embeddings=int(cfg["max_position_embeddings"]) if cfg.get("max_position_embeddings") else None,
        attention_heads=heads,
    )


@dataclass(frozen=True)
class Fit:
    dims: ModelDims
    weights_total: int
    tp: int
    max_model_len: int
    max_num_seqs: int
    kv_bytes: int  # per element of the KV cache
    state_bytes: int  # per element of the recurrent state
    mem_total: int
    gpu_memory_utilization: float
    container_limit: int | None
    pp: int = 1  # pipeline-parallel stages: each node holds its stage's layers only

    @property
    def weights_per_node(self) -> int:
        return self.weights_total // (self.tp * self.pp)

    @property
    def full_layers_per_stage(self) -> int:
        """The full-attention layers of the fullest stage (vLLM splits the layers as evenly as it can)."""
        return -(-self.dims.full_attention_layers // self.pp)

    @property
    def linear_layers_per_stage(self) -> int:
        return -(-self.dims.linear_layers // self.pp)

    @property
    def kv_heads_per_node(self) -> int:
        return max(1, self.dims.kv_heads // self.tp)  # fewer KV heads than ranks: replicated

    @property
    def kv_per_token(self) -> int:
        d = self.dims
        return self.full_layers_per_stage * self.kv_heads_per_node * d.head_dim * 2 * self.kv_bytes

    @property
    def kv_per_sequence(self) -> int:
        return self.kv_per_token * self.max_model_len

    @property
    def state_per_sequence(self) -> int:
        d = self.dims
        heads = max(1, d.linear_value_heads // self.tp) if d.linear_value_heads else 0
        return self.linear_layers_per_stage * heads * d.linear_key_head_dim * d.linear_value_head_dim * self.state_bytes

    @property
    def need(self) -> int:
        return self.weights_per_node + self.kv_per_sequence + self.state_per_sequence * self.max_num_seqs

    @property
    def budget(self) -> int:
        return int(self.gpu_memory_utilization * self.mem_total)

    @property
    def weights_fit(self) -> bool:
        return self.weights_per_node < self.budget

    @property
    def fits(self) -> bool:
        return self.need <= self.budget and (self.container_limit is None or self.need <= self.container_limit)

    def lines(self) -> list[str]:
        d = self.dims
        kind = f"{d.dtype}" + (f", {d.quantization} quantized" if d.quantization else "")
        split, per = f"TP {self.tp}" + (f" x PP {self.pp}" if self.pp > 1 else ""), " per stage" if self.pp > 1 else ""
        out = [
            f"weights ({kind}): {gib(self.weights_total)} / {split} = {gib(self.weights_per_node)} per node",
            f"KV cache: {self.full_layers_per_stage} full-attention layers{per} x {self.kv_heads_per_node} KV head(s)"
            " per node"
            f" x head_dim {d.head_dim} x 2 (K,V) x {self.kv_bytes} B = {self.kv_per_token / KIB:g} KiB/token/node;"
            f" x max_model_len {self.max_model_len} = {gib(self.kv_per_sequence)}",
        ]
        if self.state_per_sequence:
            heads = max(1, d.linear_value_heads // self.tp)
            out.append(
                f"recurrent state: {self.linear_layers_per_stage} layers{per} x {heads} V heads per node x "
                f"{d.linear_key_head_dim} x "
                f"{d.linear_value_head_dim} x {self.state_bytes} B = {self.state_per_sequence / MIB:g} MiB/sequence;"
                f" x max-num-seqs {self.max_num_seqs} = {self.state_per_sequence * self.max_num_seqs / MIB:g} MiB"
            )
        out.append(
            f"need {gib(self.need)} per node; budget --gpu-memory-utilization {self.gpu_memory_utilization:g} x "
            f"MemTotal {gib(self.mem_total)} = {gib(self.budget)}"
            + (f"; container limit {gib(self.container_limit)}" if self.container_limit else "")
        )
        return out


def gib(n: int | float) -> str:
    return f"{n / GIB:.2f} GiB"


def tp_split_problems(dims: ModelDims, tp: int) -> list[str]:
    """How the attention heads fail to split over `tp` ranks, as vLLM's QKV sharding needs them: the
    query heads a multiple of TP; the KV heads a multiple of TP, or, fewer than TP, a divisor of it
    (each then replicated TP / KV times). [] when they split."""
    out = []
    if dims.attention_heads % tp:
        out.append(f"{dims.attention_heads} attention heads do not divide by TP {tp}")
    kv = dims.kv_heads
    if kv >= tp and kv % tp:
        out.append(f"{kv} KV heads do not divide by TP {tp}")
    elif kv < tp and tp % kv:
        out.append(f"TP {tp} is not a multiple of the {kv} KV heads (fewer KV heads than ranks are replicated)")
    return out
