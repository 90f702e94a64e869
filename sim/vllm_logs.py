"""What a simulated node's vLLM container logged: the startup of the field report (its milestones,
their durations and figures), in vLLM's own formats (vllm/logger.py's prefix and the format strings
of the reference notes), NCCL's transport line, and the transformers noise every Qwen3 start
prints. `docker logs` (sim/stubs/docker.py) prints these lines with Docker's timestamps.

A line is (seconds after the container started, text); the lines a scenario adds come after.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["NOISE", "Line", "retuning_lines", "stamped", "startup_log"]

Line = tuple[float, str]

NOISE = (
    "[transformers] ERROR: Qwen3VLProcessor: `min_frames` is not documented in the processor's docstring",
    "[transformers] ERROR: Qwen3VLProcessor: `max_frames` is not documented in the processor's docstring",
)


def _vllm(prefix: str, stamp: datetime, where: str, text: str) -> str:
    return f"{prefix}INFO {stamp:%m-%d %H:%M:%S} [{where}] {text}"


def startup_log(
    rank: int,
    started: datetime,
    *,
    version: str,
    model: str,
    served: str,
    port: int,
    transport: str,
    host: str,
    world: int,
    master: str,
    devices: list[str],
    oob: str,
    eager: bool = False,
    nccl_version: str = "2.29.7",
    retune: float = 0.0,
    dmabuf: bool = True,
) -> list[Line]:
    """The container's log of a healthy start on this rank of `world`: weights 850.66 s on rank 0 and
    300.79 s on each follower, engine init 73.57 s, graphs 5 s (the field report's figures). `host` is
    the node's hostname, `master` rank 0's address, `devices` the RDMA devices NCCL uses and `oob` its
    socket interface (netdev:address). `retune` seconds of kernel compilation and tuning follow the weights
    (a first start after a topology change: retuning_lines). `dmabuf`: the image's libmlx5 exports
    mlx5dv_reg_dmabuf_mr, so NCCL says GPU Direct RDMA (DMABUF) is enabled per HCA; else its dlvsym probe
    fails and it says Disabled (a DGX Spark's NCCL 2.30.7 lines, selftests/data/commands)."""
    load = 850.66 if rank == 0 else 300.79
    engine = "(EngineCore_DP0 pid=187) " if rank == 0 else f"(Worker_TP{rank} pid=88) "
    lines: list[Line] = []

    def at(seconds: float, text: str, where: str = "", prefix: str = engine) -> None:
        stamp = started + timedelta(seconds=seconds)
        lines.append((seconds, _vllm(prefix, stamp, where, text) if where else text))

    if rank == 0:
        at(0.5, f"vLLM API server version {version}", "api_server.py:1351", "(APIServer pid=1) ")
        mode = "eager" if eager else "<CUDAGraphMode.FULL_DECODE_ONLY: (2, 0)>"
        at(
            4.0,
            f"Initializing a V1 LLM engine (v{version}) with config: model='{model}', tensor_parallel_size={world}, "
            f"enforce_eager={eager}, served_model_name={served}, compilation_config={{'mode': 0, 'cudagraph_mode': "
            f"{mode}, 'cudagraph_capture_sizes': [1, 2, 4, 8, 16]}}",
            "core.py:93",
        )
    else:
        at(
            0.5,
            f"Launching vLLM (v{version}) with headless multiproc executor, head node address {master}",
            "serve.py:212",
            "",
        )
    at(9.0, f"rank {rank} in world size {world} is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank {rank}, "
       "EP rank 0", "parallel_state.py:1411")  # fmt: skip
    at(9.4, f"vLLM is using nccl=={nccl_version}", "pynccl.py:111")
    if transport == "IB":
        using = " ".join(f"[{i}]{device}:1/RoCE" for i, device in enumerate(devices))
        nccl = f"NET/IB : Using {using} [RO]; OOB {oob}<0>"
    else:
        nccl = f"NET/Socket : Using [0]{oob}<0>"
    at(9.6, f"{host}:187:187 [0] NCCL INFO {nccl}")
    if transport == "IB":
        if not dmabuf:
            at(9.6, f"{host}:187:187 [0] NCCL INFO dlvsym failed on mlx5dv_reg_dmabuf_mr - /lib/aarch64-linux-gnu/"
               "libmlx5.so: undefined symbol: mlx5dv_reg_dmabuf_mr, version MLX5_1.25")  # fmt: skip
        for i, device in enumerate(devices):
            state = "(DMABUF) enabled" if dmabuf else "Disabled"
            at(9.6, f"{host}:187:187 [0] NCCL INFO NET/IB : GPU Direct RDMA {state} for HCA {i} '{device}'")
    at(10.0, f"Starting to load model {model}...", "gpu_model_runner.py:3562")
    for noise in NOISE:
        at(10.2, noise)
    at(10.0 + load - 0.5, f"Loading weights took {load - 0.55:.2f} seconds", "default_loader.py:308")
    at(10.0 + load, f"Model loading took 86.33 GiB memory and {load:.6f} seconds", "gpu_model_runner.py:3659")
    for seconds, where, text in retuning_lines(rank, retune):
        at(10.0 + load + seconds, text, where)
    kv = 7.62 if rank == 0 else 6.78
    at(10.0 + load + retune + 60.0, f"Available KV cache memory: {kv:.2f} GiB", "gpu_worker.py:375")
    if rank != 0:
        return lines
    done = 10.0 + load + retune + 73.57
    at(done - 13.0, "GPU KV cache size: 541,401 tokens", "kv_cache_utils.py:1291")
    at(done - 13.0, "Maximum concurrency for 262,144 tokens per request: 2.07x", "kv_cache_utils.py:1296")
    if not eager:
        at(done - 1.0, "Graph capturing finished in 5 secs, took 0.36 GiB", "gpu_model_runner.py:4587")
    at(done, "init engine (profile, create kv cache, warmup model) took 73.57 seconds", "core.py:259")
    at(done + 1.0, f"Starting vLLM API server 0 on http://0.0.0.0:{port}", "api_server.py:1960", "(APIServer pid=1) ")
    for i, text in enumerate(
        ("Started server process [1]", "Waiting for application startup.", "Application startup complete.")
    ):
        lines.append((done + 1.5 + i * 0.1, f"(APIServer pid=1) INFO:     {text}"))
    return lines


def retuning_lines(rank: int, seconds: float) -> list[tuple[float, str, str]]:
    """What a rank logs while it compiles and tunes its kernels for `seconds` after its weights (the first
    start after a topology change): vLLM 0.12.0's format strings (compilation/backends.py and monitor.py,
    model_executor/warmup/kernel_warmup.py), as (seconds after the weights, file:line, text)."""
    if not seconds:
        return []
    cache = f"/root/.cache/vllm/torch_compile_cache/3c1f5e0a2b/rank_{rank}_0/backbone"
    dynamic, total = seconds * 0.55, seconds * 0.9
    out = [
        (0.5, "backends.py:656", f"Using cache directory: {cache} for vLLM's torch.compile"),
        (12.0, "backends.py:716", "Dynamo bytecode transform time: 11.84 s"),
        (dynamic, "backends.py:289", f"Compiling a graph for dynamic shape takes {dynamic - 12:.2f} s"),
    ]
    for i, shape in enumerate((1, 2, 4, 8)):
        when = dynamic + (total - dynamic) * (i + 1) / 4
        out.append(
            (when, "backends.py:295", f"Compiling a graph for shape {shape} takes {(total - dynamic) / 4:.2f} s")
        )
    out.append((total, "monitor.py:34", f"torch.compile takes {total - 0.5:.2f} s in total"))
    out.append((seconds * 0.95, "kernel_warmup.py:65", "Warming up FlashInfer attention."))
    return out


def stamped(lines: list[Line], started: datetime) -> list[str]:
    """`docker logs --timestamps`: RFC 3339 with nanoseconds, UTC, then the line."""
    out = []
    for seconds, text in lines:
        stamp = (started + timedelta(seconds=seconds)).astimezone(UTC)
        out.append(f"{stamp:%Y-%m-%dT%H:%M:%S.%f}000Z {text}")
    return out
