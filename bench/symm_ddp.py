"""DDP's step with gradient buckets in symmetric memory (torch_hccl_go.symm.DistributedDataParallel)
against torch's DDP with ordinary buckets, on the same model and data, in one job.

    torchrun --nproc-per-node 2 bench/symm_ddp.py [--width 1024] [--depth 5] [--batch 8]
        [--bucket-cap-mb 25] [--steps 30] [--json out.json]

The model is an MLP of `depth` hidden layers of `width` (about depth·width² float32
gradients). Each round runs one training step (forward, backward, SGD) of each wrapper, in
turn; rank 0 prints the median step of the slowest rank.
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
from torch.nn.parallel import DistributedDataParallel as DDP


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/symm_ddp.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=5)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--bucket-cap-mb", type=float, default=25)
    p.add_argument("--steps", type=int, default=30, help="timed steps of each (after 3 untimed)")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    dist.init_process_group("hccl_go")
    control = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    def model() -> torch.nn.Module:
        torch.manual_seed(0)
        layers: list[torch.nn.Module] = []
        for _ in range(args.depth):
            layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    nets = {
        "ordinary": DDP(model(), bucket_cap_mb=args.bucket_cap_mb, gradient_as_bucket_view=True),
        "symmetric": symm.DistributedDataParallel(model(), bucket_cap_mb=args.bucket_cap_mb),
    }
    opts = {k: torch.optim.SGD(n.parameters(), lr=1e-3) for k, n in nets.items()}
    grads = sum(p.numel() for p in nets["ordinary"].parameters()) * 4
    times: dict[str, list[float]] = {k: [] for k in nets}
    x = torch.randn(args.batch, args.width)
    for i in range(args.steps + 3):
        for kind, net in nets.items():
            dist.barrier(group=control)
            t0 = time.perf_counter()
            opts[kind].zero_grad(set_to_none=False)
            net(x).square().mean().backward()
            opts[kind].step()
            if i >= 3:
                times[kind].append(time.perf_counter() - t0)
    mine = {k: statistics.median(times[k]) for k in nets}
    every: list = [None] * world
    dist.all_gather_object(every, mine, group=control)
    if rank == 0:
        rows = {k: {"step_s": max(e[k] for e in every)} for k in nets}
        print(f"# DDP step, world {world}, {grads / 1e6:.1f} MB of gradients, median of {args.steps}, slowest rank")
        print(f"{'buckets':>10} {'step ms':>8}")
        for k, row in rows.items():
            print(f"{k:>10} {row['step_s'] * 1e3:8.2f}")
        print(f"symmetric / ordinary step: {rows['symmetric']['step_s'] / rows['ordinary']['step_s']:.2f}")
        if args.json:
            with open(args.json, "w") as f:
                record = {
                    "date": datetime.now(UTC).isoformat(),
                    "world": world,
                    "grad_bytes": grads,
                    "args": vars(args),
                }
                json.dump(record | {"rows": rows}, f, indent=1)
    dist.destroy_process_group(control)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
