"""NUMA nodes as a level of the hierarchy, through torch.distributed: four ranks on one host
split 2+2 by a topology file (HCCL_GO_TOPO_FILE, "numa" per rank) whose links across the
two NUMA nodes are slow. The cost model then takes the NUMA level (an arena per NUMA node,
shared-memory messages between them) for large ops by itself, small all_reduces stay in the
host's arena, and every collective gives the reference result; forced for every op
(HCCL_GO_ALGO=numa) too. With equal links the level is off and every op runs in the arena."""

from __future__ import annotations

import json

import pytest
from harness import BACKEND, run_ranks

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's topology and routes")

NUMA = [0, 0, 1, 1]
NUMA_EVERYWHERE = "allreduce=numa,allgather=numa,reducescatter=numa,broadcast=numa,reduce=numa"


def topo_file(path: str, cross_bytes_per_s: float) -> str:
    """One host of four ranks on NUMA nodes NUMA: 100 GB/s within a node, cross_bytes_per_s
    across."""
    links = []
    for i in range(4):
        for j in range(i + 1, 4):
            bw = 100e9 if NUMA[i] == NUMA[j] else cross_bytes_per_s
            links.append({"ranks": [i, j], "latency_ns": 1000, "bytes_per_s": bw})
    doc = {
        "format": "hccl-go-topo",
        "version": 1,
        "ranks": [{"host": "numa-host", "numa": n} for n in NUMA],
        "links": links,
    }
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def numa_job(ctx) -> dict:
    import os

    import torch
    import torch.distributed as dist
    import torch_hccl_go

    p, me = ctx.world_size, ctx.rank
    small, large = (0, 1, 7, 1001), (1 << 20) + 3  # elements; large: 4 MiB of float32, odd
    for n in (*small, large):
        for dtype, op in (
            (torch.float32, dist.ReduceOp.SUM),
            (torch.bfloat16, dist.ReduceOp.AVG),
            (torch.int32, dist.ReduceOp.MAX),
        ):
            if n == large and dtype != torch.float32:
                continue
            g = [torch.Generator().manual_seed(1000 * n + 10 * r + dtype.itemsize) for r in range(p)]
            every = [torch.randint(-3, 4, (n * p,), generator=g[r]).to(dtype) for r in range(p)]
            if op == dist.ReduceOp.SUM:
                want = sum(every[1:], every[0].clone())
            elif op == dist.ReduceOp.AVG:
                want = (sum(x.float() for x in every) / p).to(dtype)
            else:
                want = torch.stack(every).amax(0)
            what = f"{dtype} {op} n={n}"

            t = every[me].clone()
            dist.all_reduce(t, op=op)
            assert torch.equal(t, want), f"all_reduce {what}"

            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, every[me], op=op)
            assert torch.equal(out, want[me * n : (me + 1) * n]), f"reduce_scatter {what}"

            root = n % p
            t = every[me].clone()
            dist.reduce(t, dst=root, op=op)
            if me == root:
                assert torch.equal(t, want), f"reduce {what}"

            gathered = torch.empty(n * p, dtype=dtype)
            dist.all_gather_into_tensor(gathered, every[me][:n])
            assert torch.equal(gathered, torch.cat([x[:n] for x in every])), f"all_gather {what}"

            t = every[me].clone()
            dist.broadcast(t, src=(root + 1) % p)
            assert torch.equal(t, every[(root + 1) % p]), f"broadcast {what}"

    # Random floats: every rank ends with the same bits.
    x = torch.randn(100003, generator=torch.Generator().manual_seed(me))
    dist.all_reduce(x)
    gathered = [torch.empty_like(x) for _ in range(p)]
    dist.all_gather(gathered, x)
    assert all(torch.equal(gathered[0], y) for y in gathered), "ranks disagree on a float sum"

    numa_groups = torch_hccl_go.comm_info().get("numa_groups")
    path = torch_hccl_go.dump_trace(None, os.path.join(ctx.store_dir, f"trace{me}.json"))
    with open(path) as f:
        ops = json.load(f)["ops"]
    routes: dict[str, set] = {}
    for o in ops:
        routes.setdefault(f"{o['op']} {o['bytes'] >= 4 << 20}", set()).add(o["route"])
    return {"routes": {k: sorted(v) for k, v in routes.items()}, "numa_groups": numa_groups}


@pytest.mark.parametrize(
    "level, forced",
    [(True, False), (True, True), (False, False)],
    ids=["slow links: chosen by size", "slow links: forced", "equal links: off"],
)
def test_numa_level_through_torch(tmp_path, level, forced):
    env = {
        "HCCL_GO_TOPO_FILE": topo_file(str(tmp_path / "topo.json"), 2.5e9 if level else 100e9),
        "HCCL_GO_TOPO_PROBE": "0",
    }
    if forced:
        env["HCCL_GO_ALGO"] = NUMA_EVERYWHERE
    results = run_ranks(numa_job, 4, env=env, timeout=240)
    for rank, r in enumerate(results):
        assert r["numa_groups"] == ([[0, 1], [2, 3]] if level else None), f"rank {rank}: {r}"
        routes = r["routes"]
        for kind in ("allreduce", "reducescatter", "allgather", "broadcast", "reduce"):
            large = routes.get(f"{kind} True", [])
            small = routes.get(f"{kind} False", [])
            if not level:
                assert set(large) | set(small) == {"arena"}, f"rank {rank} {kind}: {routes}"
            elif forced:
                assert set(large) | set(small) == {"numa+arena"}, f"rank {rank} {kind}: {routes}"
            elif kind != "broadcast":
                assert large == ["numa+arena"], f"rank {rank} {kind} 4 MiB: {routes}"
        if level and not forced:
            assert "arena" in routes["allreduce False"], f"rank {rank}: small all_reduces stay in the arena: {routes}"
