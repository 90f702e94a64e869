"""The model fits each node: weights at the TP size, KV cache for max_model_len and the recurrent
state for max-num-seqs, within --gpu-memory-utilization x MemTotal and the container limit."""

import pytest

from gb10check.errors import ParseError
from gb10check.judging.fit import DTYPE_BYTES, Fit
from gb10check.reading import probes

pytestmark = pytest.mark.preflight

# vLLM's own defaults, for flags the compose does not give
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
DEFAULT_MAX_NUM_SEQS = 256


def _number(run, flag, default, kind):
    value = run.value(flag)
    return kind(value) if value is not None else default


@pytest.mark.hints("kv-cache-oom")
def test_model_fits(node, cluster, inventory, deployment, evidence):
    """The model, its KV cache and activations fit the node's memory.

    The weights divided by TP (x PP), the KV cache for max_model_len and the recurrent state times max-num-seqs (with
    pipeline parallelism, of the fullest stage's layers), within `--gpu-memory-utilization` x MemTotal and the
    container's memory limit; the arithmetic is printed. Without `--max-model-len` the model's own context length
    counts, and vLLM's defaults stand for `--max-num-seqs` and `--gpu-memory-utilization` where the compose gives
    none. Weights that alone do not fit fail first: loading would not fail cleanly, the driver deadlocks and the node
    must be rebooted."""
    snap = node.snapshot()
    dims = snap.fact(probes.HF_CONFIG)
    total = snap.fact(probes.HF_INDEX)
    mem = snap.fact(probes.MEMINFO)
    plan = cluster.plan(node.name)
    run = plan.vllm
    # without --max-model-len vLLM takes the model's own context length
    max_len = _number(run, "--max-model-len", dims.max_position_embeddings, int)
    if max_len is None:
        raise ParseError("config.json", "no --max-model-len in the command and no max_position_embeddings", "")
    kv_dtype = run.value("--kv-cache-dtype") or "auto"
    fit = Fit(
        dims=dims,
        weights_total=total,
        tp=inventory.cluster.tensor_parallel_size,
        max_model_len=max_len,
        max_num_seqs=_number(run, "--max-num-seqs", DEFAULT_MAX_NUM_SEQS, int),
        kv_bytes=DTYPE_BYTES.get(kv_dtype, 2),
        state_bytes=2,
        mem_total=mem.total,
        gpu_memory_utilization=_number(run, "--gpu-memory-utilization", DEFAULT_GPU_MEMORY_UTILIZATION, float),
        container_limit=plan.container.memory.known(),
        pp=_number(run, "--pipeline-parallel-size", 1, int),  # each stage holds its own layers
    )
    arithmetic = "\n  " + "\n  ".join(fit.lines())
    if not fit.weights_fit:
        hint = "bf16-does-not-fit" if dims.unquantized_16bit else "model-does-not-fit"
        evidence.expect(
            False,
            what="model weights per node",
            expected=f"< the GPU memory budget {fit.budget / 2**30:.2f} GiB",
            found=f"{fit.weights_per_node / 2**30:.2f} GiB",
            detail="loading would not fail cleanly: the driver deadlocks and the node must be rebooted" + arithmetic,
            hints=(hint,),
        )
    evidence.expect(
        fit.fits,
        what="model memory per node (weights + KV + recurrent state)",
        expected="within the GPU memory budget and the container limit",
        found=arithmetic,
        detail="lower --max-model-len or --max-num-seqs, or raise --gpu-memory-utilization within the container limit",
    )
