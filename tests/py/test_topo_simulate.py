"""The topology simulator from Python: torch_hccl_go.topo.simulate and
`python -m torch_hccl_go.topo simulate` (through hcclGoTopoSimulate)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from harness import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="the simulator belongs to hccl_go")

ISSUE_ARGS = [
    "--hosts", "1024", "--ranks-per-host", "8", "--size", "1GiB", "--inter-bw", "200Gbit", "--intra-bw", "100GB"
]


def test_simulate_api():
    from torch_hccl_go import topo

    r = topo.simulate(hosts=2, ranks_per_host=2, size="64MiB", inter_bw="1Gbit", intra_bw="5GB")
    assert r["ranks"] == 4 and r["bytes"] == 64 << 20 and r["op"] == "allreduce"
    algos = {a["algo"]: a for a in r["algos"]}
    assert set(algos) == {"ring", "hd", "rd", "hier"}
    assert r["chosen"] == "hier"
    # Two hosts at 1 Gbit/s: the hierarchical all_reduce moves 2/3 of a flat
    # ring's bytes across (the ring crosses each host boundary once).
    assert algos["ring"]["time_s"] / algos["hier"]["time_s"] > 1.4
    assert "<- chosen" in r["table"]


def test_simulate_compression():
    """--compression fp16 halves the hierarchy's inter-host bytes, and only the
    algorithms that compress (ring, hier) are costed."""
    from torch_hccl_go import topo

    args = dict(hosts=2, ranks_per_host=2, size="64MiB", inter_bw="1Gbit", intra_bw="5GB")
    plain = {a["algo"]: a["time_s"] for a in topo.simulate(**args)["algos"]}
    r = topo.simulate(compression="fp16", codec_bw=0, **args)
    comp = {a["algo"]: a["time_s"] for a in r["algos"]}
    assert set(comp) == {"ring", "hier"} and r["chosen"] == "hier"
    assert comp["hier"] / plain["hier"] == pytest.approx(0.5, rel=0.01)


@pytest.mark.parametrize(
    "args, message",
    [({"size": "1XB"}, "unknown unit"), ({"hosts": 0}, "hosts"), ({"bogus": 1}, "bogus")],
)
def test_simulate_rejects(args, message):
    from torch_hccl_go import topo

    with pytest.raises(ValueError, match=message):
        topo.simulate(**args)


def test_cli_issue_cluster():
    """1024 hosts x 8 ranks answers in a few seconds (torch import included)."""
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "torch_hccl_go.topo", "simulate", *ISSUE_ARGS],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    elapsed = time.monotonic() - start
    assert "over 8192 ranks" in out
    for algo in ("ring", "hier", "hd", "rd"):
        assert f"\n{algo} " in out
    assert "chosen:" in out
    assert elapsed < 30, f"the simulator took {elapsed:.1f} s"


def test_cli_bad_flag():
    p = subprocess.run(
        [sys.executable, "-m", "torch_hccl_go.topo", "simulate", "--size", "1XB"],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 2 and "unknown unit" in p.stderr


def test_scale_api():
    """The scale model: S x (N - k) sockets per rank, none inside a host, and the
    descriptors and memory that come with them (hcclGoTopoScale)."""
    from torch_hccl_go import topo

    r = topo.scale(hosts=2048, ranks_per_host=8, lazy_links="0")
    assert r["ranks"] == 16384 and r["sockets"] == 16384 - 8 and not r["lazy_links"]
    assert r["fds"] > r["sockets"]
    assert r["private_bytes_links_active"] > r["private_bytes_after_init"] > 0
    assert r["init_seconds"] > 0 and r["init_dominant"] and r["memory_dominant"]
    assert "init dominated by" in r["table"]
    one_host = topo.scale(hosts=1, ranks_per_host=64, streams_per_peer=4)
    assert one_host["sockets"] == 0 and one_host["shm_bytes"] > 0
    assert topo.scale(hosts=4, ranks_per_host=8, streams_per_peer=2)["sockets"] == 2 * 24
    # Lazy links (the default above 64 ranks on other hosts): discovery's ring neighbour and the
    # listener after init; the ops' partners as they link them.
    lazy = topo.scale(hosts=2048, ranks_per_host=8)
    assert lazy["lazy_links"] and lazy["sockets"] == 2
    assert [f["peers"] for f in lazy["fanout"]] == [2, 11, 2047, 16376]
    with pytest.raises(ValueError, match="hosts"):
        topo.scale(hosts=0)


def test_cli_scale():
    out = subprocess.run(
        [sys.executable, "-m", "torch_hccl_go.topo", "scale", "--hosts", "2048", "--ranks-per-host", "8"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert "16384 ranks: 2048 hosts x 8 ranks" in out
    assert "TCP sockets" in out and "lazy TCP links" in out and "16376" in out
