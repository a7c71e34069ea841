"""Communicators that span emulated hosts (HCCL_GO_HOST_ID per rank): ranks of one host
reach each other through the shared-memory arena (comm_info says shm+arena), the others
over TCP, and the hierarchical collectives, forced for every op, give the reference
result through torch.distributed on even and uneven hosts and in subgroups: one that
connects its own links, and splits of the default group (by default every subgroup), whose
arena phases run in arenas of the split's members on each host. A split with one member
per host has no arena phase and runs as messages. With HCCL_GO_SHM_COLLECTIVES=0 the same
hierarchical collectives run each host's phases as messages over the shm transport."""

from __future__ import annotations

import pytest
from harness import BACKEND, run_ranks

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's hosts and transports")

HIER_EVERYWHERE = "allreduce=hier,allgather=hier,reducescatter=hier,broadcast=hier,reduce=hier"
SIZES = (1, 7, 100003)


def inputs(rank: int, n: int, dtype, seed: int):
    """Small integers: every order of reduction gives the same bits."""
    import torch

    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return torch.randint(-3, 4, (n,), generator=g).to(dtype)


def hosts_job(ctx, hosts: list[str], subgroup: list[int] | None, split: bool | None = False) -> dict:
    """split None: the default setting, which splits every subgroup."""
    import json
    import os

    import torch
    import torch.distributed as dist
    import torch_hccl_go

    os.environ["HCCL_GO_HOST_ID"] = hosts[ctx.rank]
    ctx.init_process_group()
    ranks = list(range(ctx.world_size))
    group = None
    if subgroup is not None:
        opts = torch_hccl_go.Options() if split is None else torch_hccl_go.Options(split_groups=split)
        group = dist.new_group(subgroup, backend="hccl_go", pg_options=opts, sort_ranks=False)
        ranks = subgroup
        if ctx.rank not in subgroup:
            return {}
        if split is None:
            split = True
    info = torch_hccl_go.comm_info(group)
    assert ("split" in info) == bool(split), f"split {split}, comm_info {info}"
    transports = info["transports"]
    me = ranks.index(ctx.rank)
    # One member per host: no arena phase, messages only.
    apart = len({hosts[r] for r in ranks}) == len(ranks)
    arenas = os.environ.get("HCCL_GO_SHM_COLLECTIVES", "1") != "0"
    local = "shm+arena" if arenas else "shm"
    for peer, kind in enumerate(transports):
        want = "self" if peer == me else (local if hosts[ranks[peer]] == hosts[ctx.rank] else "tcp")
        assert kind == want, f"transport to peer {peer}: {kind}, want {want} ({transports})"

    p = len(ranks)
    for n in SIZES:
        cases = (
            (torch.float32, dist.ReduceOp.SUM),
            (torch.bfloat16, dist.ReduceOp.AVG),
            (torch.int64, dist.ReduceOp.MAX),
        )
        for dtype, op in cases:
            seed = n + int(dtype.itemsize)
            every = [inputs(r, n, dtype, seed) for r in range(p)]
            if op == dist.ReduceOp.SUM:
                want = sum(every[1:], every[0].clone())
            elif op == dist.ReduceOp.AVG:
                want = (sum(x.float() for x in every) / p).to(dtype)
            else:
                want = torch.stack(every).amax(0)
            what = f"{dtype} {op} n={n}"

            t = every[me].clone()
            dist.all_reduce(t, op=op, group=group)
            assert torch.equal(t, want), f"all_reduce {what}"

            root = ranks[n % p]
            t = every[me].clone()
            dist.reduce(t, dst=root, op=op, group=group)
            if ctx.rank == root:
                assert torch.equal(t, want), f"reduce {what}"

            blocks = [inputs(r, n * p, dtype, seed) for r in range(p)]
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, blocks[me], op=op, group=group)
            if op == dist.ReduceOp.SUM:
                whole = sum(blocks[1:], blocks[0].clone())
            elif op == dist.ReduceOp.AVG:
                whole = (sum(x.float() for x in blocks) / p).to(dtype)
            else:
                whole = torch.stack(blocks).amax(0)
            assert torch.equal(out, whole[me * n:(me + 1) * n]), f"reduce_scatter {what}"

            gathered = torch.empty(n * p, dtype=dtype)
            dist.all_gather_into_tensor(gathered, every[me], group=group)
            assert torch.equal(gathered, torch.cat(every)), f"all_gather {what}"

            t = every[me].clone()
            src = ranks[(n + 1) % p]
            dist.broadcast(t, src=src, group=group)
            assert torch.equal(t, every[ranks.index(src)]), f"broadcast {what}"

    # The flight recorder names the route: intra-host phases in the arena, or as messages.
    path = torch_hccl_go.dump_trace(group, os.path.join(ctx.store_dir, f"trace{ctx.rank}.json"))
    with open(path) as f:
        routes = {(op["op"], op["route"]) for op in json.load(f)["ops"]}
    route = "messages" if apart else ("hier+arena" if arenas else "hier")
    for kind in ("allreduce", "reduce", "reducescatter", "allgather", "broadcast"):
        assert (kind, route) in routes, f"{kind} did not run as {route}: {sorted(routes)}"
    return {"transports": transports}


@pytest.mark.parametrize(
    "hosts, subgroup, split",
    [
        (["a", "a", "b", "b"], None, False),
        (["a", "a", "a", "b"], None, False),
        (["a", "b", "a", "a"], [0, 1, 3], False),
        (["a", "b", "a", "a"], [3, 1, 0], True),
        (["a", "b", "a", "a"], [0, 1, 3], None),
        (["a", "b", "a", "b"], [2, 1], None),
    ],
    ids=["2+2", "3+1", "subgroup 2+1 of 3+1", "split 2+1 of 3+1", "default: 2+1 of 3+1", "default: 1+1 of 2+2"],
)
def test_hierarchical_collectives_across_hosts(hosts, subgroup, split):
    env = {"HCCL_GO_ALGO": HIER_EVERYWHERE, "HCCL_GO_TOPO_PROBE": "0"}
    results = run_ranks(hosts_job, len(hosts), args=(hosts, subgroup, split), init=False, env=env, timeout=240)
    print(results)


@pytest.mark.parametrize(
    "hosts, subgroup, split",
    [(["a", "a", "b", "b"], None, False), (["a", "b", "a", "a"], [3, 1, 0], True)],
    ids=["2+2", "split 2+1 of 3+1"],
)
def test_hierarchical_collectives_with_lazy_links(hosts, subgroup, split):
    """The same checks with every TCP link made on first use (HCCL_GO_LAZY_LINKS=1)."""
    env = {"HCCL_GO_ALGO": HIER_EVERYWHERE, "HCCL_GO_TOPO_PROBE": "0", "HCCL_GO_LAZY_LINKS": "1"}
    results = run_ranks(hosts_job, len(hosts), args=(hosts, subgroup, split), init=False, env=env, timeout=240)
    print(results)


@pytest.mark.parametrize("hosts", [["a", "a", "b", "b"], ["a", "b", "a", "b"]], ids=["2+2", "2+2 interleaved"])
def test_hierarchical_collectives_as_messages(hosts):
    """The same checks without arenas (HCCL_GO_SHM_COLLECTIVES=0): each host's phases run as
    messages among its ranks (the route "hier")."""
    env = {"HCCL_GO_ALGO": HIER_EVERYWHERE, "HCCL_GO_TOPO_PROBE": "0", "HCCL_GO_SHM_COLLECTIVES": "0"}
    results = run_ranks(hosts_job, len(hosts), args=(hosts, None, False), init=False, env=env, timeout=240)
    print(results)
