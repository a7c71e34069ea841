"""torch.distributed across two emulated hosts (network namespaces joined by a veth), with
no hccl_go setting but HCCL_GO_HOST_ID: MASTER_ADDR points into the first namespace, and
each rank publishes the address of its route there (pgbackend/listen.go).

The namespaces (netns_hosts.py, through the two_hosts fixture of conftest.py) need root
and the tests skip, saying why, without it. Hold `flock /tmp/netns.lock` when running them
beside other namespace tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from harness import BACKEND

RANK_SCRIPT = r"""
import json, os, sys
import torch, torch.distributed as dist
if os.environ["BACKEND"] == "hccl_go":
    import torch_hccl_go
dist.init_process_group(os.environ["BACKEND"])
t = torch.full((1000,), float(dist.get_rank() + 1))
dist.all_reduce(t)
info = torch_hccl_go.comm_info() if os.environ["BACKEND"] == "hccl_go" else {}
dist.destroy_process_group()
print("RESULT " + json.dumps({"sum": t.tolist()[:3], "ok": bool(torch.all(t == 3.0)), "info": info}), flush=True)
"""


def _run_ranks(hosts, extra_env):
    """Starts rank r on hosts[r] with MASTER_ADDR on the first one; returns
    (returncode, output) per rank. Every other HCCL_GO_* variable is removed."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("HCCL_GO_")}
    base.update(MASTER_ADDR=hosts[0].addr, MASTER_PORT="29500", WORLD_SIZE=str(len(hosts)), BACKEND=BACKEND)
    base.update(OMP_NUM_THREADS="1")
    procs = []
    for rank, host in enumerate(hosts):
        env = dict(base, RANK=str(rank), LOCAL_RANK="0", HCCL_GO_HOST_ID=f"emulated-host-{rank}", **extra_env[rank])
        if BACKEND == "gloo":
            env["GLOO_SOCKET_IFNAME"] = host.ifname  # gloo needs it; hccl_go does not
        cmd = host.exec([sys.executable, "-c", RANK_SCRIPT])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    results = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += "\n[killed after 120 s]"
        results.append((p.returncode, out))
    return results


def test_two_hosts_without_settings(two_hosts):
    transports = []
    for rank, (code, out) in enumerate(_run_ranks(two_hosts, [{}, {}])):
        assert code == 0, f"rank {rank} exited with {code}:\n{out[-3000:]}"
        line = [x for x in out.splitlines() if x.startswith("RESULT ")]
        assert line, f"rank {rank} printed no result:\n{out[-3000:]}"
        res = json.loads(line[-1][len("RESULT ") :])
        assert res["ok"], f"rank {rank}: all_reduce gave {res['sum']}"
        transports.append(res["info"].get("transports"))
    if BACKEND == "hccl_go":
        assert transports == [["self", "tcp"], ["tcp", "self"]]
    print(f"\n{BACKEND} across two namespaces, transports per rank: {transports}")


@pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's own check of published addresses")
def test_loopback_across_hosts_fails_every_rank(two_hosts):
    """Rank 0 listens on loopback (HCCL_GO_SOCKET_IFNAME=lo) while rank 1 is on another host:
    both ranks fail at once, with the address and the variable to set."""
    results = _run_ranks(two_hosts, [{"HCCL_GO_SOCKET_IFNAME": "lo"}, {}])
    for rank, (code, out) in enumerate(results):
        assert code != 0, f"rank {rank} succeeded:\n{out[-3000:]}"
        assert "rank 0 publishes 127.0.0.1:" in out and "HCCL_GO_SOCKET_IFNAME" in out, f"rank {rank}:\n{out[-3000:]}"


@pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's rendezvous")
def test_store_host_is_found_under_prefix_stores(tmp_path, monkeypatch):
    """The host each rank routes to: the TCPStore's under any PrefixStores, else MASTER_ADDR
    (brackets dropped), else none."""
    import torch.distributed as dist
    from torch_hccl_go._rendezvous import store_host

    monkeypatch.setenv("MASTER_ADDR", "[fd99::1]")
    server = dist.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    assert store_host(dist.PrefixStore("group", dist.PrefixStore("default_pg", server))) == "127.0.0.1"
    files = dist.FileStore(str(tmp_path / "store"), 1)
    assert store_host(dist.PrefixStore("group", files)) == "fd99::1"
    monkeypatch.delenv("MASTER_ADDR")
    assert store_host(files) == ""
