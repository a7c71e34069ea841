"""Collectives on symmetric tensors (torch_hccl_go.symm.empty, read in place) against ordinary
tensors of the same size, in one job, interleaved.

    torchrun --nproc-per-node 2 bench/symm_ops.py [--ops all_reduce,broadcast,all_gather,reduce_scatter]
        [--sizes 1MiB,16MiB,128MiB] [--iters 20] [--json out.json]

Each round times one op (float32 sum for the reductions) on ordinary tensors, then one on
symmetric tensors (the output of all_reduce, broadcast and all_gather, the input of
reduce_scatter, whose output is an ordinary tensor either way), every rank between gloo
barriers; rank 0 prints per op and size (the bytes of the larger buffer) the median time of the
slowest rank and the bus bandwidth as nccl-tests counts it: 2(p-1)/p bytes per byte for
all_reduce, (p-1)/p for all_gather and reduce_scatter, 1 for broadcast.
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
    p = argparse.ArgumentParser(prog="bench/symm_ops.py", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--ops", default="all_reduce", help="comma list of all_reduce, broadcast, all_gather, reduce_scatter"
    )
    p.add_argument("--sizes", default="1MiB,16MiB,128MiB", help="bytes of each output (default 1MiB,16MiB,128MiB)")
    p.add_argument("--iters", type=int, default=20, help="timed rounds per size (default 20, after 2 untimed)")
    p.add_argument("--json", default="", help="rank 0 writes the figures here")
    p.add_argument("--gap-ms", type=float, default=0, help="idle time before each timed op (default 0)")
    p.add_argument("--small-ops", type=int, default=0, help="8-byte all_reduces before each timed op (default 0)")
    args = p.parse_args(argv)
    sizes = parse_sizes(args.sizes)

    dist.init_process_group("hccl_go")
    control = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = []
    for opname in args.ops.split(","):
        for size in sizes:
            rows.append(_time(opname, size, world, rank, control, args.iters, args.gap_ms, args.small_ops))
    if rank == 0:
        print(
            f"# float32, world {world}, median of {args.iters} rounds, slowest rank; before each timed op "
            f"{args.small_ops} small all_reduces and {args.gap_ms:g} ms idle"
        )
        head = f"{'op':>10} {'size':>8} {'ordinary us':>12} {'busbw GB/s':>10} {'symmetric us':>13} {'busbw GB/s':>10}"
        print(f"{head} {'speed-up':>8}")
        for row in rows:
            o, s = row["ordinary"], row["symmetric"]
            print(
                f"{row['op']:>10} {format_size(row['size']):>8} {o['time_s'] * 1e6:12.1f} {o['busbw_gbps']:10.2f} "
                f"{s['time_s'] * 1e6:13.1f} {s['busbw_gbps']:10.2f} {o['time_s'] / s['time_s']:8.2f}"
            )
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"date": datetime.now(UTC).isoformat(), "world": world, "rows": rows}, f, indent=1)
    dist.destroy_process_group(control)
    dist.destroy_process_group()
    return 0


# Bus bandwidth factor per op (nccl-tests' convention) at world p.
FACTORS = {
    "all_reduce": lambda p: 2 * (p - 1) / p,
    "all_gather": lambda p: (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
}


def _time(opname: str, size: int, world: int, rank: int, control, iters: int, gap_ms: float, small_ops: int) -> dict:
    """One op at one size (the output's bytes), ordinary and symmetric tensors interleaved; each
    timed op after gap_ms of idle time and small_ops 8-byte all_reduces (what a job does
    before it)."""
    tiny = torch.zeros(2)
    n = size // 4
    block = n // world
    tensors = {
        "ordinary": (torch.ones(n), torch.ones(block)),
        "symmetric": (symm.empty(n), torch.ones(block)),
    }
    tensors["symmetric"][0].fill_(1.0)

    def run(out, mine):
        if opname == "all_reduce":
            dist.all_reduce(out)
        elif opname == "broadcast":
            dist.broadcast(out, src=0)
        elif opname == "all_gather":
            dist.all_gather_into_tensor(out[: block * world], mine)
        elif opname == "reduce_scatter":
            dist.reduce_scatter_tensor(mine, out[: block * world])
        else:
            raise SystemExit(f"unknown op {opname!r}")

    times: dict[str, list[float]] = {k: [] for k in tensors}
    for i in range(iters + 2):
        for kind, (out, mine) in tensors.items():
            dist.barrier(group=control)
            for _ in range(small_ops):
                dist.all_reduce(tiny)
            if gap_ms > 0:
                time.sleep(gap_ms / 1e3)
            t0 = time.perf_counter()
            run(out, mine)
            if i >= 2:
                times[kind].append(time.perf_counter() - t0)
    mine_t = {k: statistics.median(v) for k, v in times.items()}
    every: list = [None] * world
    dist.all_gather_object(every, mine_t, group=control)
    row = {"op": opname, "size": size}
    for kind in tensors:
        worst = max(e[kind] for e in every)
        row[kind] = {"time_s": worst, "busbw_gbps": FACTORS[opname](world) * size / worst / 1e9}
    return row


if __name__ == "__main__":
    sys.exit(main())
