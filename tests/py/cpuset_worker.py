"""A torchrun worker for test_cpusets.py: every collective at a few sizes, checked against a
local reference, with what a training step does between them (small-op loops, idle gaps,
compute bursts). Rank 0 prints one line, "cpuset-result: " and a JSON object: the checks that
failed, the CPUs each rank may use, and GOMAXPROCS."""

from __future__ import annotations

import json
import os
import time

import torch
import torch.distributed as dist
import torch_hccl_go  # noqa: F401  (registers the backend)

SIZES = (1, 7, 16 << 10, 256 << 10)  # elements: odd, small, 64 KiB, 1 MiB of float32


def data(rank: int, n: int, salt: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 * salt + rank)
    return torch.randint(-8, 8, (n,), generator=g).float()  # integers: sums are exact


def between(step: int) -> None:
    """One of the things a training step does between collectives."""
    kind = step % 4
    if kind == 0:
        for _ in range(50):
            dist.all_reduce(torch.ones(2))
    elif kind == 1:
        time.sleep(0.001)
    elif kind == 2:
        time.sleep(0.01)
    else:
        m = torch.randn(64, 64)
        end = time.perf_counter() + 0.003
        while time.perf_counter() < end:
            m = torch.tanh(m @ m)


def checks(rank: int, world: int) -> list[str]:
    failed = []
    step = 0
    for n in SIZES:
        for salt, name in enumerate(("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all")):
            between(step)
            step += 1
            xs = [data(r, n * world, salt) for r in range(world)]  # every rank's input, locally
            mine = xs[rank].clone()
            if name == "all_reduce":
                dist.all_reduce(mine)
                want = sum(xs)
            elif name == "broadcast":
                root = step % world
                dist.broadcast(mine, src=root)
                want = xs[root]
            elif name == "all_gather":
                out = torch.empty(n * world * world)
                dist.all_gather_into_tensor(out, mine)
                mine, want = out, torch.cat(xs)
            elif name == "reduce_scatter":
                out = torch.empty(n)
                dist.reduce_scatter_tensor(out, mine)
                mine, want = out, sum(xs)[rank * n : (rank + 1) * n]
            else:
                out = torch.empty(n * world)
                dist.all_to_all_single(out, mine)
                mine = out
                want = torch.cat([xs[r][rank * n : (rank + 1) * n] for r in range(world)])
            if not torch.equal(mine, want):
                failed.append(f"{name} of {n * world} elements on rank {rank}")
    return failed


def main() -> None:
    dist.init_process_group(os.environ.get("HCCL_GO_TEST_BACKEND", "hccl_go"))
    rank, world = dist.get_rank(), dist.get_world_size()
    failed = checks(rank, world)
    mine = {
        "failed": failed,
        "cpus": sorted(os.sched_getaffinity(0)),
        "gomaxprocs": torch_hccl_go.comm_info()["gomaxprocs"],
    }
    every = [None] * world
    dist.all_gather_object(every, mine)
    if rank == 0:
        print("cpuset-result: " + json.dumps(every), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
