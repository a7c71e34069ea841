"""A group split from the default group across hosts, against the default group itself, the
same split made to run the flat ring, and gloo's group of the same ranks.

    torchrun ... bench/split_hier.py [--size 64MiB] [--iters 5] [--json out.json]

Run under torchrun on hosts where ranks share a host (scripts/netns_bench.sh 2x2split does,
on emulated hosts). The default group is hccl_go; every rank makes four groups of all ranks
with new_group: a split (the hierarchy, as the default group), a split with
Options(algo="ring") (the flat ring along the topology), a group with its own links
(Options(split_groups=False)) and a gloo group. Each timed round runs one float32 sum
all_reduce on each, in that order; rank 0 prints the median time per group, its ratio to
gloo's, and the algorithm the flight recorder names.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch_hccl_go
from hier_phases import _hccl_env, _last_algo  # bench/: the script's own folder is on sys.path
from torch_hccl_go.bench.sizes import format_size, parse_sizes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/split_hier.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="64MiB", help="bytes of the all_reduce (default 64MiB)")
    p.add_argument("--iters", type=int, default=5, help="timed rounds (default 5, after one untimed)")
    p.add_argument("--json", default="", help="rank 0 writes the figures here")
    args = p.parse_args(argv)
    (size,) = parse_sizes(args.size)

    dist.init_process_group("hccl_go", timeout=timedelta(minutes=10))
    rank, world = dist.get_rank(), dist.get_world_size()
    ranks = list(range(world))
    groups = {
        "default group": None,
        "split": dist.new_group(ranks, backend="hccl_go"),
        "split, ring": dist.new_group(ranks, backend="hccl_go", pg_options=torch_hccl_go.Options(algo="ring")),
        "own links": dist.new_group(ranks, backend="hccl_go", pg_options=torch_hccl_go.Options(split_groups=False)),
        "gloo": dist.new_group(ranks, backend="gloo"),
    }
    control = groups["gloo"]
    t = torch.ones(size // 4, dtype=torch.float32)
    for g in groups.values():
        dist.all_reduce(t, group=g)  # untimed: connections warm, buffers touched
    times: dict[str, list[float]] = {name: [] for name in groups}
    for _ in range(args.iters):
        for name, g in groups.items():
            dist.barrier(group=control)
            t0 = time.perf_counter()
            dist.all_reduce(t, group=g)
            times[name].append(time.perf_counter() - t0)
    mine = {name: statistics.median(v) for name, v in times.items()}
    rows: list = [None] * world
    dist.all_gather_object(rows, mine, group=control)
    if rank == 0:
        worst = {name: max(r[name] for r in rows) for name in groups}
        record = {"size": size, "world": world, "iters": args.iters, "env": _hccl_env(), "groups": {}}
        print(f"# all_reduce of {format_size(size)}, world {world}, median of {args.iters} rounds, slowest rank")
        print(f"{'group':>14} {'split':>5} {'algo':>6} {'time s':>8} {'gloo / this':>11}")
        for name, g in groups.items():
            hccl = name != "gloo"
            split = hccl and "split" in torch_hccl_go.comm_info(g)
            algo = _last_algo(g) if hccl else ""
            ratio = worst["gloo"] / worst[name]
            print(f"{name:>14} {split!s:>5} {algo:>6} {worst[name]:8.3f} {ratio:11.2f}")
            record["groups"][name] = {"split": split, "algo": algo, "time_s": worst[name], "gloo_ratio": ratio}
        if args.json:
            with open(args.json, "w") as f:
                json.dump(record, f, indent=1)
    for g in groups.values():
        if g is not None:
            dist.destroy_process_group(g)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
