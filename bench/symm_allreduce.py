"""All_reduce on symmetric tensors (torch_hccl_go.symm.empty, read in place) against ordinary
tensors of the same size, in one job, interleaved.

    torchrun --nproc-per-node 2 bench/symm_allreduce.py [--sizes 1MiB,16MiB,128MiB]
        [--iters 20] [--json out.json]

Each round times one float32 sum dist.all_reduce on an ordinary tensor, then one on a
symmetric tensor, every rank between gloo barriers; rank 0 prints per size the median time of
the slowest rank and the bus bandwidth (2(p-1)/p bytes per byte, as nccl-tests counts it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime

import torch
import torch.distributed as dist
import torch_hccl_go.symm as symm
from torch_hccl_go.bench.sizes import format_size, parse_sizes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/symm_allreduce.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1MiB,16MiB,128MiB", help="bytes per all_reduce (default 1MiB,16MiB,128MiB)")
    p.add_argument("--iters", type=int, default=20, help="timed rounds per size (default 20, after 2 untimed)")
    p.add_argument("--json", default="", help="rank 0 writes the figures here")
    args = p.parse_args(argv)
    sizes = parse_sizes(args.sizes)

    dist.init_process_group("hccl_go")
    control = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = []
    for size in sizes:
        kinds = {"ordinary": torch.ones(size // 4), "symmetric": symm.empty(size // 4)}
        kinds["symmetric"].fill_(1.0)
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for i in range(args.iters + 2):
            for kind, t in kinds.items():
                dist.barrier(group=control)
                t0 = time.perf_counter()
                dist.all_reduce(t)
                if i >= 2:
                    times[kind].append(time.perf_counter() - t0)
        mine = {k: statistics.median(v) for k, v in times.items()}
        every: list = [None] * world
        dist.all_gather_object(every, mine, group=control)
        row = {"size": size}
        for kind in kinds:
            worst = max(e[kind] for e in every)
            row[kind] = {"time_s": worst, "busbw_gbps": 2 * (world - 1) / world * size / worst / 1e9}
        rows.append(row)
        del kinds
    if rank == 0:
        print(f"# float32 sum all_reduce, world {world}, median of {args.iters} rounds, slowest rank")
        head = f"{'size':>8} {'ordinary us':>12} {'busbw GB/s':>10} {'symmetric us':>13} {'busbw GB/s':>10}"
        print(f"{head} {'speed-up':>8}")
        for row in rows:
            o, s = row["ordinary"], row["symmetric"]
            print(
                f"{format_size(row['size']):>8} {o['time_s'] * 1e6:12.1f} {o['busbw_gbps']:10.2f} "
                f"{s['time_s'] * 1e6:13.1f} {s['busbw_gbps']:10.2f} {o['time_s'] / s['time_s']:8.2f}"
            )
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"date": datetime.now(UTC).isoformat(), "world": world, "rows": rows}, f, indent=1)
    dist.destroy_process_group(control)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
