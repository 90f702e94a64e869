"""The peer: the preflight snapshot's reads as a pytest-testinfra user writes them.

One test per read, the hosts as parameters (`--hosts ssh://NODE,...`: testinfra's `host` fixture),
each read one `host.run` over testinfra's ssh backend (one `ssh` process and login per read, as
testinfra runs it), its exit status checked against what the read accepts (`host.run_expect`).
The reads are the suite's own (gb10check/reading/probes.py), written per node by benchmarks/bench_peer.py
into the file $PEER_READS: {node: {read: [command, [accepted exit statuses]]}}.
"""

import json
import os
from pathlib import Path

import pytest

READS = json.loads(Path(os.environ["PEER_READS"]).read_text())
NAMES = sorted({name for reads in READS.values() for name in reads})


@pytest.mark.parametrize("read", NAMES)
def test_read(host, read):
    mine = READS[host.backend.get_hostname()]
    if read not in mine:
        pytest.skip(f"{read} is not a read of this node")
    command, accepted = mine[read]
    host.run_expect(accepted, command)
