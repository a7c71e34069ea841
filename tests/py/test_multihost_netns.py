"""torch.distributed across two emulated hosts (network namespaces joined by a veth), with
no hccl_go setting but HCCL_GO_HOST_ID: MASTER_ADDR points into the first namespace, and
each rank publishes the address of its route there (pgbackend/listen.go).

The namespace tests need root (ip netns add) and skip, saying why, without it. The
namespaces carry a random prefix and are deleted at the end; their addresses
(10.199.0.0/16) exist only inside them. Hold `flock /tmp/netns.lock` when running them
beside other namespace tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid

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


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def two_hosts():
    """Namespaces a (10.199.1.1 on va) and b (10.199.1.2 on vb), joined by va-vb."""
    if shutil.which("ip") is None:
        pytest.skip("ip (iproute2) not found")
    prefix = "hgpy" + uuid.uuid4().hex[:6]
    a, b = prefix + "a", prefix + "b"
    made = []
    try:
        r = _ip("netns", "add", a)
        if r.returncode != 0:
            pytest.skip(f"network namespaces need root (ip netns add: {r.stderr.strip()})")
        made.append(a)
        for step in (
            ["netns", "add", b],
            ["link", "add", "va", "netns", a, "type", "veth", "peer", "name", "vb", "netns", b],
            ["-n", a, "addr", "add", "10.199.1.1/24", "dev", "va"],
            ["-n", b, "addr", "add", "10.199.1.2/24", "dev", "vb"],
            ["-n", a, "link", "set", "va", "up"],
            ["-n", b, "link", "set", "vb", "up"],
            ["-n", a, "link", "set", "lo", "up"],
            ["-n", b, "link", "set", "lo", "up"],
        ):
            r = _ip(*step)
            if step[:2] == ["netns", "add"] and r.returncode == 0:
                made.append(step[2])
            if r.returncode != 0:
                pytest.skip(f"netns set-up refused: ip {' '.join(step)}: {r.stderr.strip()}")
        yield a, b
    finally:
        for ns in made:
            _ip("netns", "del", ns)


def _run_ranks(namespaces, extra_env):
    """Starts rank r in namespaces[r] with MASTER_ADDR in the first one; returns
    (returncode, output) per rank. Every other HCCL_GO_* variable is removed."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("HCCL_GO_")}
    base.update(MASTER_ADDR="10.199.1.1", MASTER_PORT="29500", WORLD_SIZE=str(len(namespaces)), BACKEND=BACKEND)
    base.update(OMP_NUM_THREADS="1")
    procs = []
    for rank, ns in enumerate(namespaces):
        env = dict(base, RANK=str(rank), LOCAL_RANK="0", HCCL_GO_HOST_ID=f"emulated-host-{rank}", **extra_env[rank])
        if BACKEND == "gloo":
            env["GLOO_SOCKET_IFNAME"] = "va" if rank == 0 else "vb"  # gloo needs it; hccl_go does not
        cmd = ["ip", "netns", "exec", ns, sys.executable, "-c", RANK_SCRIPT]
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
