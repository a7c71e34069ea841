#!/usr/bin/env python3
"""What HCCL_GO_CHECK costs: latency of an 8-byte all_reduce with and without the
fingerprint check, through torch, in one job.

    .venv/bin/python scripts/check_cost.py              # world 2 and 4
    .venv/bin/python scripts/check_cost.py --world 4 --iters 2000 --rounds 7

The job creates two process groups over the same ranks, one with check=1, and
alternates batches of --iters all_reduces between them, --rounds times; it prints
the median and the best batch's time per op for each (the best is the least
disturbed by other load on the host).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from datetime import timedelta


def rank_main(rank: int, world: int, iters: int, rounds: int, store_dir: str, q) -> None:
    import torch
    import torch.distributed as dist
    import torch_hccl_go

    torch.set_num_threads(1)
    store = dist.FileStore(os.path.join(store_dir, "store"), world)
    off = torch_hccl_go.Options(extra={"check": "0"})
    dist.init_process_group(
        "hccl_go", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=120), pg_options=off
    )
    checked = dist.new_group(list(range(world)), pg_options=torch_hccl_go.Options(extra={"check": "1"}))
    groups = {"no check": None, "HCCL_GO_CHECK=1": checked}
    t = torch.ones(2)
    times: dict[str, list[float]] = {name: [] for name in groups}
    for g in groups.values():  # warm up
        for _ in range(100):
            dist.all_reduce(t, group=g)
    for _ in range(rounds):
        for name, g in groups.items():
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t, group=g)
            times[name].append((time.perf_counter() - start) / iters * 1e6)
    q.put((rank, times))
    dist.destroy_process_group()


def measure(world: int, iters: int, rounds: int) -> dict[str, list[float]]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    store_dir = tempfile.mkdtemp(prefix="hccl_go_check_cost_")
    procs = [ctx.Process(target=rank_main, args=(r, world, iters, rounds, store_dir, q)) for r in range(world)]
    for p in procs:
        p.start()
    results = dict(q.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return results[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, action="append", help="world size (repeatable; default 2 and 4)")
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for world in args.world or [2, 4]:
        times = measure(world, args.iters, args.rounds)
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"world {world} {name:16s} 8 B all_reduce: median {med:7.1f} us/op, best {min(ts):7.1f} us/op")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
