"""One rank of gb10check's collective in the serving image (gb10check/reading/collective.py), as the simulated node's
`docker run` runs it: the sim has no GPU and no torch, so this stands in for the image's python3 running the
program, over the sim's real sockets between the nodes' namespaces (a firewall rule, a wrong address or a
wrong interface fails for real).

What it does, as torch.distributed and NCCL do it: rank 0 serves the store on the master address and port
(torch's TCPStore), every rank connects to it within the join bound and posts the address it reached it
from and a listening port of its own (NCCL's bootstrap: ephemeral ports), then each rank connects to the
next rank's port (NCCL's bootstrap ring). Its NCCL INFO and WARN lines are NCCL's format strings
(src/init.cc, src/bootstrap.cc, src/transport/net_ib.cc, net_socket.cc, net.cc; NCCL 2.27-2.29) with the
node's devices; the values (an all_reduce of rank + 1, an all_gather of the ranks) are computed from what
the ranks exchanged. The node's `docker.collective` state: `ib` (the image's RDMA userspace: false, NCCL
finds no IB device and falls back to sockets), `busbw_gbs` (the bus bandwidth it reports), `wrong_result`
(this rank's all_reduce comes out wrong), `hang` (it never ends: the suite's bound and cleanup must).

Standalone (stdlib only): run by sim/stubs/docker.py inside the node's namespace.
"""

from __future__ import annotations

import json
import socket
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MARK",
    "TYPE_CHECKING",
    "hca_selects",
    "run",
]

MARK = "gb10check-collective"


def hca_selects(value: str, devices: list[str]) -> list[str]:
    """NCCL_IB_HCA as NCCL reads it (src/misc/utils.cc matchIfList): a comma list of name[:port] prefixes,
    `=` for exact names, `^` to exclude; empty: every device."""
    if not value:
        return list(devices)
    exclude, exact = value.startswith("^"), False
    value = value.lstrip("^")
    if value.startswith("="):
        exact, value = True, value[1:]
    names = [v.split(":")[0] for v in value.split(",") if v]
    hit = [d for d in devices if any(d == n if exact else d.startswith(n) for n in names)]
    return [d for d in devices if d not in hit] if exclude else hit


def _line(host: str, pid: int, text: str) -> str:
    return f"{host}:{pid}:{pid} [0] NCCL {text}"


def _say(kind: str, **what: object) -> str:
    return f"{MARK} {kind} {json.dumps(what)}"


def _recv_line(sock: socket.socket, deadline: float) -> str:
    data = b""
    while not data.endswith(b"\n"):
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("Connection closed by remote peer")
        data += chunk
    return data.decode()


def _connect(addr: str, port: int, deadline: float) -> socket.socket:
    """Connect, retrying a refused connection until the deadline (as the store's clients and NCCL do)."""
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return socket.create_connection((addr, port), timeout=max(0.1, min(3.0, deadline - time.monotonic())))
        except ConnectionRefusedError as exc:
            last = exc
            time.sleep(0.2)
        except OSError as exc:
            last = exc
    raise TimeoutError(f"connect to {addr}:{port}: {last or 'timed out'}")


def run(state: dict[str, Any], env: dict[str, str], out: list[str]) -> int:
    host, pid = state["node"], 137
    rank, world = int(env["GB10CHECK_RANK"]), int(env["GB10CHECK_WORLD"])
    master, port = env["GB10CHECK_MASTER"], int(env["GB10CHECK_PORT"])
    deadline = time.monotonic() + float(env["GB10CHECK_JOIN_S"])
    d = state["docker"]
    cfg = d.get("collective") or {}
    version = (d.get("nccl_library") or {}).get("version", "2.29.7+cuda13.0")
    out.append(_say("started", rank=rank, nccl=version.split("+")[0]))
    if rank == 0:
        out.append(_line(host, pid, f"INFO NCCL version {version}"))
    ports = [p for p in state.get("rdma_ports", []) if not p.get("down")]
    ifname = env.get("NCCL_SOCKET_IFNAME", "")
    devices = hca_selects(env.get("NCCL_IB_HCA", ""), [p["rdma_device"] for p in ports])
    ib = cfg.get("ib", True) and env.get("NCCL_IB_DISABLE", "0") != "1" and bool(devices)
    if cfg.get("hang"):  # NCCL's init never returns (a hung build): the suite's bound, then its docker rm -f, end it
        _flush(out)
        while True:
            time.sleep(3600)
    try:
        listener = socket.socket()
        listener.bind(("0.0.0.0", 0))
        listener.listen(8)
        server = None
        if rank == 0:
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind((master, port))
            server.listen(world)
        store = _connect(master, port, deadline)
        mine = {"rank": rank, "addr": store.getsockname()[0], "port": listener.getsockname()[1], "value": rank + 1}
        peers = [store]
        if server is not None:
            server.settimeout(max(0.1, deadline - time.monotonic()))
            clients: list[socket.socket] = []
            while len(clients) < world:
                try:
                    conn, _ = server.accept()
                except TimeoutError as exc:
                    raise TimeoutError(
                        f"the store on {master}:{port} saw {len(clients)} of {world} ranks within the join bound"
                    ) from exc
                clients.append(conn)
            store.sendall((json.dumps(mine) + "\n").encode())
            posted = [json.loads(_recv_line(c, deadline)) for c in clients]
            table = json.dumps(sorted(posted, key=lambda p: p["rank"])) + "\n"
            for c in clients:
                c.sendall(table.encode())
            peers += clients
        else:
            store.sendall((json.dumps(mine) + "\n").encode())
        table_rows = json.loads(_recv_line(store, deadline))
        oob = f"{ifname or 'eth0'}:{mine['addr']}<0>"
        if ib:
            using = " ".join(f"[{i}]{dev}:1/RoCE" for i, dev in enumerate(devices))
            out.append(_line(host, pid, f"INFO NET/IB : Using {using} [RO]; OOB {oob}"))
            dmabuf = d.get("mlx5_dmabuf", True)
            if not dmabuf:
                out.append(_line(host, pid, "INFO dlvsym failed on mlx5dv_reg_dmabuf_mr - /lib/aarch64-linux-gnu/"
                                 "libmlx5.so: undefined symbol: mlx5dv_reg_dmabuf_mr, version MLX5_1.25"))  # fmt: skip
            for i, dev in enumerate(devices):
                said = "(DMABUF) enabled" if dmabuf else "Disabled"
                out.append(_line(host, pid, f"INFO NET/IB : GPU Direct RDMA {said} for HCA {i} '{dev}'"))
            out.append(_line(host, pid, "INFO Using network IB"))
        else:
            out.append(_line(host, pid, "INFO NET/IB : No device found."))
            out.append(_line(host, pid, f"INFO NET/Socket : Using [0]{oob}"))
            out.append(_line(host, pid, "INFO Using network Socket"))
        # the bootstrap ring: this rank connects to the next one's port, and is connected from the previous one
        nxt = table_rows[(rank + 1) % world]
        try:
            ring = _connect(nxt["addr"], int(nxt["port"]), deadline)
        except TimeoutError as exc:
            out.append(_line(host, pid, f"WARN socketStartConnect: Connect to {nxt['addr']}<{nxt['port']}> failed : "
                             "Connection timed out"))  # fmt: skip
            raise TimeoutError(f"NCCL's bootstrap to rank {nxt['rank']} at {nxt['addr']}: {exc}") from exc
        listener.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            prev, _ = listener.accept()
        except TimeoutError as exc:
            raise TimeoutError("NCCL's bootstrap: the previous rank never connected") from exc
        ring.close()
        prev.close()
        net = "NET/IB" if ib else "NET/Socket"
        gdr = "/GDRDMA" if ib and d.get("mlx5_dmabuf", True) else ""
        for ch in range(2):
            out.append(
                _line(host, pid, f"INFO Channel {ch:02d}/0 : {rank}[0] -> {nxt['rank']}[0] [send] via {net}/{ch}{gdr}")
            )
        out.append(
            _say("joined", rank=rank, seconds=round(float(env["GB10CHECK_JOIN_S"]) - (deadline - time.monotonic()), 3))
        )
        total = sum(int(r["value"]) for r in table_rows)
        allreduce_ok = total == world * (world + 1) // 2 and not cfg.get("wrong_result")
        allgather_ok = [int(r["rank"]) for r in table_rows] == list(range(world))
        busbw = float(cfg.get("busbw_gbs", 24.0))
        sizes = [int(s) for s in env["GB10CHECK_SIZES"].split(",")]
        figures = [
            {"op": op, "bytes": s, "busbw_gbs": round(busbw * (0.6 + 0.4 * i / max(1, len(sizes) - 1)), 3)}
            for op in ("all_gather", "all_reduce")
            for i, s in enumerate(sizes)
        ]
        out.append(_say("result", rank=rank, allreduce_ok=allreduce_ok, allgather_ok=allgather_ok, figures=figures))
        for s in peers:
            s.close()
        return 0
    except (OSError, ValueError) as exc:
        out.append(_say("error", rank=rank, type=type(exc).__name__, message=str(exc)))
        return 3


def _flush(out: list[str]) -> None:
    sys.stdout.write("".join(f"{line}\n" for line in out))
    sys.stdout.flush()
    out.clear()
