"""perftest's ib_write_bw of a simulated node: a real TCP exchange between the nodes' namespaces."""

from __future__ import annotations

import re
import time

__all__ = [
    "BANNER",
    "COMPLETION_ERROR",
    "NO_CONNECT",
    "NO_LISTEN",
    "NO_SOCKET",
    "PERF_LINE",
    "RTR",
    "STARS",
    "TYPE_CHECKING",
    "WC_FAILURE",
    "ib_write_bw",
]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any

# -- perftest's ib_write_bw: a real TCP exchange between the nodes' namespaces ----------------------
# Layout and messages from perftest's source (selftests/data/SOURCES.md): the exchange goes over
# the link's veth to the peer's address, so ufw, a down link and a missing server act on it as on
# the real tool; the bandwidth is the one the scenario gives the port.
PERF_LINE = "-" * 87
NO_SOCKET = "Unable to open file descriptor for socket connection\n Unable to init the socket connection\n"
NO_CONNECT = "Couldn't connect to {host}:{port}\n" + NO_SOCKET
NO_LISTEN = "Couldn't listen to port {port}\n" + NO_SOCKET
STARS = "************************************"
BANNER = f"\n{STARS}\n* Waiting for client to connect... *\n{STARS}\n"
RTR = "Failed to modify QP 1001 to RTR\n Unable to Connect the HCA's through the link\n"
# the scenario's bw_failure -> the work-completion status the client reports (libibverbs' number and text)
WC_FAILURE = {
    "retry-exceeded": (12, "transport retry counter exceeded"),
    "rnr-retry-exceeded": (13, "RNR retry counter exceeded"),
    "remote-access": (10, "remote access error"),
    "remote-operation": (11, "remote operation error"),
}
# NOTIFY_COMP_ERROR_SEND as each perftest prints it: the status's number, or (26.01 on) its text and number
COMPLETION_ERROR = {
    "24.01": " Completion with error at client\n Failed status {code}: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n",
    "26.04": " Completion with error at client\n Failed status-{text} ({code}): wr_id 0 syndrom 0x81\n"
    " scnt=128, ccnt=0\n",
}


def _strtol(text: str) -> int:
    """C's strtol(text, NULL, 0) as perftest reads -D: the leading integer, 0 when there is none ("0.5" -> 0)."""
    digits = re.match(r"\s*[-+]?\d*", text)
    try:
        return int(digits[0]) if digits else 0
    except ValueError:
        return 0


def _perf_args(args: list[str]) -> dict[str, Any]:
    """perftest's options that the stub acts on (the others are accepted and ignored)."""
    import argparse  # only ib_write_bw pays for it

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-d", "--ib-dev", dest="dev")
    parser.add_argument("-i", "--ib-port")
    parser.add_argument("-x", "--gid-index", dest="gid", type=int, default=0)
    parser.add_argument("-p", "--port", type=int, default=18515)
    parser.add_argument("-D", "--duration", dest="seconds", type=_strtol, default=5)
    parser.add_argument("--report_gbits", dest="gbits", action="store_true")
    parser.add_argument("host", nargs="?")
    known, _ = parser.parse_known_args(args)
    return vars(known)


def _sysfs(dev: str, name: str) -> str | None:
    try:
        with open(f"/sys/class/infiniband/{dev}/ports/1/{name}") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _gid_usable(dev: str, index: int, address: str) -> bool:
    """What moving the queue pair to RTR needs: the GID at `index` is RoCE v2 for `address`, the
    address this end of the exchange really uses on the link (another address's GID routes elsewhere)."""
    gid = (_sysfs(dev, f"gids/{index}") or "").replace(":", "")
    if not gid.startswith("0" * 20 + "ffff") or _sysfs(dev, f"gid_attrs/types/{index}") != "RoCE v2":
        return False
    return ".".join(str(int(gid[i : i + 2], 16)) for i in range(24, 32, 2)) == address


def _gid_decimal(dev: str, index: int) -> str:
    gid = (_sysfs(dev, f"gids/{index}") or "0000:" * 7 + "0000").replace(":", "")
    return ":".join(f"{int(gid[i : i + 2], 16):02d}" for i in range(0, 32, 2))


def _perf_header(dev: str, gid: int, server: bool) -> str:
    lines = [
        PERF_LINE,
        "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : {dev}",
        " Number of qps   : 1\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        *([] if server else [" TX depth        : 128"]),
        " CQ Moderation   : 1",
        " Mtu             : 1024[B]",
        " Link type       : Ethernet",
        f" GID index       : {gid}",
        " Max inline data : 0[B]",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
        PERF_LINE,
    ]
    return "\n".join(lines) + "\n"


def _perf_addresses(dev: str, gid: int, peer_gid: str) -> str:
    return (
        " local address: LID 0000 QPN 0x01b8 PSN 0x6c40bb RKey 0x184300 VAddr 0x00f3c34c74d000\n"
        f" GID: {_gid_decimal(dev, gid)}\n"
        " remote address: LID 0000 QPN 0x01c1 PSN 0xef8f64 RKey 0x184300 VAddr 0x00fc043705d000\n"
        f" GID: {peer_gid}\n{PERF_LINE}\n"
    )


def _toward(port: dict[str, Any], peer: str) -> tuple[float, str | None]:
    """What this end of the rail carries toward `peer` (an address), Gb/s, and the completion error its
    writes end in (a WC_FAILURE key), if they fail."""
    failure = port.get("failure")
    return float(port.get("to", {}).get(peer, port.get("gbps", 0.0))), failure if failure in WC_FAILURE else None


def ib_write_bw(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    import socket

    o = _perf_args(args)
    if o["seconds"] <= 0:  # perftest_parameters.c, case 'D'
        return "", " Duration period must be greater than 0\n", 1
    perf = state["perftest"]
    dev = o["dev"] or (perf["ports"] and sorted(perf["ports"])[0])
    if not dev or _sysfs(dev, "state") is None:
        return "", f"IB device {dev} not found\n Unable to find the Infiniband/RoCE device\n", 1
    port_state = _sysfs(dev, "state") or ""
    if not port_state.endswith("ACTIVE"):
        word = port_state.split(":", 1)[-1].strip().capitalize()
        return (
            "",
            f" Port number 1 state is {word}\n Couldn't set the link layer\n Couldn't get context for the device\n",
            1,
        )
    warn = " WARNING: BW peak won't be measured in this run.\n"
    me = perf["ports"].get(dev, {})
    if o["host"] is None:  # the server
        out = warn + BANNER
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("0.0.0.0", o["port"]))
            listener.listen(1)
        except OSError:
            return out, NO_LISTEN.format(port=o["port"]), 1
        listener.settimeout(o["seconds"] + 60)
        conn, _ = listener.accept()
        with conn, conn.makefile("rw") as peer:
            hello = peer.readline().split()  # "<gid usable 0|1> <the client's GID, decimal>"
            ok = _gid_usable(dev, o["gid"], conn.getsockname()[0])
            # this end's GID, then what this end carries toward the client and whether its writes fail
            gbps, failing = _toward(me, conn.getpeername()[0])
            peer.write(f"{int(ok)} {_gid_decimal(dev, o['gid'])} {gbps} {failing or '-'}\n")
            peer.flush()
            out += _perf_header(dev, o["gid"], server=True)
            if not ok or hello[:1] != ["1"]:
                return out, RTR, 1
            out += _perf_addresses(dev, o["gid"], hello[1])
            peer.readline()  # the client's "done" (or its end)
        unit = "Gb" if o["gbits"] else perf["mb_label"]
        return (
            out + f" #bytes     #iterations    BW peak[{unit}/sec]    BW average[{unit}/sec]   MsgRate[Mpps]\n",
            "",
            0,
        )
    try:
        conn = socket.create_connection((o["host"], o["port"]), timeout=120)  # the kernel's SYN retries
    except OSError:
        return warn, NO_CONNECT.format(host=o["host"], port=o["port"]), 1
    with conn, conn.makefile("rw") as peer:
        ok = _gid_usable(dev, o["gid"], conn.getsockname()[0])
        peer.write(f"{int(ok)} {_gid_decimal(dev, o['gid'])}\n")
        peer.flush()
        answer = peer.readline().split()
        out = warn + _perf_header(dev, o["gid"], server=False)
        if not ok or answer[:1] != ["1"]:
            return out, RTR, 1
        out += _perf_addresses(dev, o["gid"], answer[1])
        # the run is as fast as its slower end, and fails when either end's writes do (with its status)
        mine, failing = _toward(me, o["host"])
        theirs = answer[3] if len(answer) > 3 and answer[3] in WC_FAILURE else None
        gbps = min(mine, float(answer[2])) if len(answer) > 3 else mine
        failure = failing or theirs
        if failure:
            code, text = WC_FAILURE[failure]
            time.sleep(min(o["seconds"], 0.5) * perf.get("time_scale", 1.0))
            return out, COMPLETION_ERROR[perf["version"]].format(code=code, text=text), 1
        time.sleep(o["seconds"] * perf.get("time_scale", 1.0))  # the sim's clock (sim/node_files.py time_scale)
        peer.write("done\n")
        peer.flush()
    rate = gbps * 1e9 / 8 / 65536 / 1e6  # Mpps of 64 KiB messages
    average = gbps if o["gbits"] else gbps / (2**20 * 8 / 1e9)
    unit = "Gb" if o["gbits"] else perf["mb_label"]
    table = (
        f" #bytes     #iterations    BW peak[{unit}/sec]    BW average[{unit}/sec]   MsgRate[Mpps]\n"
        f" {65536:<7}    {int(rate * 1e6 * o['seconds']):<10}       {0.0:<7.2f}            {average:<7.2f}\t\t     "
        f"{rate:<7.6f}\n{PERF_LINE}\n"
    )
    return out + table, "", 0
