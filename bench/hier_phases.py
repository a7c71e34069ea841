"""Where a hierarchical all_reduce across hosts spends its time: its arena phases (the
reduce-scatter and all-gather inside each host) against its inter-host exchange.

    torchrun ... bench/hier_phases.py [--size 64MiB] [--iters 5] [--json out.json]

Run under torchrun on hosts where ranks share a host (scripts/netns_bench.sh does, on
emulated hosts). Each iteration is a float32 sum all_reduce on an hccl_go group;
torch_hccl_go.stats() counts, per op kind, the time the calling thread spent in arena phases
(arena_ns) and the time of the inter-host exchange (inter_ns). Rank 0 prints, per rank, the
median wall time per call, arena and inter-host time per call, and the arena phases' busbw:
the bytes a single-host all_reduce among the host's R ranks would count for the same two
phases, 2(R-1)/R·n, over the arena time (compare with the single-host bench's busbw at the
same size, `python -m torch_hccl_go.bench --ops all_reduce` on one host). The arena time
splits into waiting for the host's other ranks (arena_wait_ns: a peer still busy with another
round's inter-host exchange, or off the CPU) and this rank's own copies and reductions; the
work busbw counts the same bytes over the latter.

A large all_reduce runs in rounds whose arena phases overlap other rounds' inter-host phase,
so arena + inter may exceed the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch_hccl_go
from torch_hccl_go.bench.sizes import format_size, parse_sizes
from torch_hccl_go.stats import delta, stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/hier_phases.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="64MiB", help="bytes of the all_reduce (default 64MiB)")
    p.add_argument("--iters", type=int, default=5, help="timed calls (default 5, after one untimed)")
    p.add_argument("--json", default="", help="rank 0 writes the figures here")
    args = p.parse_args(argv)
    (size,) = parse_sizes(args.size)

    dist.init_process_group("gloo", timeout=timedelta(minutes=10))  # control: gathers the figures
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.new_group(backend="hccl_go")
    info = torch_hccl_go.comm_info(group)
    local = sum(1 for t in info["transports"] if t in ("self", "shm+arena"))
    t = torch.ones(size // 4, dtype=torch.float32)
    dist.all_reduce(t, group=group)  # untimed: connections warm, buffers touched

    walls, arena, inter, waits = [], [], [], []
    for _ in range(args.iters):
        dist.barrier(group=group)
        before = stats(group)
        t0 = time.perf_counter()
        dist.all_reduce(t, group=group)
        walls.append(time.perf_counter() - t0)
        d = delta(before, stats(group))["ops"]["allreduce"]
        arena.append(d.get("arena_ns", 0) / 1e9)
        inter.append(d.get("inter_ns", 0) / 1e9)
        waits.append(d.get("arena_wait_ns", 0) / 1e9)
    mine = {
        "rank": rank,
        "local_ranks": local,
        "wall_s": statistics.median(walls),
        "arena_s": statistics.median(arena),
        "inter_s": statistics.median(inter),
        "arena_wait_s": statistics.median(waits),
        "arena_work_s": statistics.median(a - w for a, w in zip(arena, waits, strict=True)),
        "algo": _last_algo(group),
    }
    rows: list = [None] * world
    dist.all_gather_object(rows, mine)
    if rank == 0:
        for row in rows:
            r = row["local_ranks"]
            phase_bytes = 2 * (r - 1) / r * size
            for key, secs in (("arena_busbw_gbps", row["arena_s"]), ("arena_work_busbw_gbps", row["arena_work_s"])):
                row[key] = phase_bytes / secs / 1e9 if secs > 0 else None
        print(f"# hierarchical all_reduce of {format_size(size)}, world {world}, median of {args.iters} calls")
        print(
            f"{'rank':>4} {'local':>5} {'algo':>6} {'wall s':>8} {'arena s':>8} {'waiting':>8} {'inter s':>8} "
            f"{'arena busbw GB/s':>17} {'work busbw GB/s':>16}"
        )

        def gbps(v: float | None) -> str:
            return "-" if v is None else f"{v:.3f}"

        for row in rows:
            print(
                f"{row['rank']:>4} {row['local_ranks']:>5} {row['algo']:>6} {row['wall_s']:8.3f} {row['arena_s']:8.3f} "
                f"{row['arena_wait_s']:8.3f} {row['inter_s']:8.3f} {gbps(row['arena_busbw_gbps']):>17} "
                f"{gbps(row['arena_work_busbw_gbps']):>16}"
            )
        if args.json:
            with open(args.json, "w") as f:
                record = {"size": size, "world": world, "iters": args.iters, "env": _hccl_env(), "ranks": rows}
                json.dump(record, f, indent=1)
    dist.destroy_process_group(group)
    dist.destroy_process_group()
    return 0


def _last_algo(group: dist.ProcessGroup) -> str:
    """The algorithm of the group's last op, from its flight recorder."""
    with tempfile.TemporaryDirectory() as tmp:
        path = torch_hccl_go.dump_trace(group, os.path.join(tmp, "trace.json"))
        with open(path) as f:
            ops = json.load(f).get("ops", [])
    return ops[-1].get("algo", "") if ops else ""


def _hccl_env() -> dict:
    return {k: v for k, v in os.environ.items() if k.startswith("HCCL_GO_")}


if __name__ == "__main__":
    sys.exit(main())
