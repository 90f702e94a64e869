"""NCCL's word on GPU Direct RDMA per HCA (gb10check/reading/parsers/vllm_log.py nccl_gdr), on lines as NCCL prints
them: a DGX Spark's (selftests/data), a 4-node GB10 write-up's where NET/IB and the RDMA plugin disagree, an
NCCL tutorial's with GDR on."""

from __future__ import annotations

from gb10check.reading.parsers.vllm_log import nccl_gdr, parse_docker_log


def test_a_dgx_spark_with_the_inbox_rdma_core_runs_without_it(capture):
    gdr = nccl_gdr(parse_docker_log(capture("commands/nccl.dgx_spark.info_net_ib_lines.verbatim.txt")))
    assert gdr is not None and not gdr.on
    assert gdr.hcas == {"rocep1s0f1": False, "roceP2p1s0f1": False}
    assert gdr.shown() == "rocep1s0f1 off, roceP2p1s0f1 off"


def test_where_two_transports_disagree_the_one_the_channels_use_wins():
    # as quoted in a public write-up of four GB10 nodes (NCCL's RDMA plugin v10 loaded; index id 55120155377)
    text = (
        "NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'rocep1s0f0'\n"
        "NCCL INFO NET/NCCL RDMA Plugin v10 : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f0'\n"
        "NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/NCCL RDMA Plugin v10/0\n"
    )
    gdr = nccl_gdr(parse_docker_log(text))
    assert gdr is not None and gdr.hcas == {"rocep1s0f0": False} and not gdr.channels_gdr
    # the same two words with the channels over NET/IB: IB's word (DMABUF, on) wins
    over_ib = text.replace("via NET/NCCL RDMA Plugin v10/0", "via NET/IB/0")
    gdr = nccl_gdr(parse_docker_log(over_ib))
    assert gdr is not None and gdr.on and gdr.shown() == "rocep1s0f0 on (DMABUF)"


def test_gdr_on_and_its_channels_and_a_log_that_says_nothing():
    # an NCCL tutorial's lines (index id 62339493551): HCA 0 on, HCA 5 off, a channel over GDRDMA
    text = (
        "hostA:31842:31905 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
        "hostA:31842:31905 [5] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 5 'mlx5_5'\n"
        "hostA:31842:31905 [0] NCCL INFO Channel 00/0 : 3[3] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
    )
    gdr = nccl_gdr(parse_docker_log(text))
    assert gdr is not None and gdr.hcas == {"mlx5_0": True, "mlx5_5": False} and gdr.channels_gdr and not gdr.on
    older = "NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n"  # before 2.12
    assert nccl_gdr(parse_docker_log(older)).hcas == {"mlx5_0": False}  # type: ignore[union-attr]
    assert nccl_gdr(parse_docker_log("INFO vLLM is using nccl==2.29.7\n")) is None
