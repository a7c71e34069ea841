"""Where a DDP step's time goes, hccl_go against gloo in one job: the timeline of each step
across ranks.

    torchrun ... bench/ddp_timeline.py [--steps 16] [--warmup 3] [--json out.json]

The model is torch_hccl_go.overlap's MLP (1024 -> 5x1024 -> 10, batch 8: 24 MiB of
gradients, one 25 MB bucket). Both backends train their own copy, steps interleaved, each
step started by a barrier on a separate gloo group; a comm hook time-stamps the bucket's
all_reduce. All ranks share one monotonic clock (one machine, or namespaces on it), so rank
0 prints, as medians over steps (ms from the first rank's start): the last forward's end,
the first and last rank issuing the all_reduce, the first and last rank seeing it done,
the last backward's end (DDP's copy of the bucket into the gradients included) and the last
step's end (optimizer and zero_grad); and per rank the optimizer's CPU time against its
wall time (more wall than CPU: the ranks wait for cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch_hccl_go  # noqa: F401  (registers the backend)
from torch.nn.parallel import DistributedDataParallel as DDP

FIELDS = ("start", "forward", "issue", "done", "backward", "step")


def model() -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(1024, 1024), nn.ReLU()]
    for _ in range(4):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(1024, 10))


class Run:
    """One backend's DDP model with a hook that time-stamps its bucket."""

    def __init__(self, group: dist.ProcessGroup, world: int):
        self.model = DDP(model(), process_group=group, bucket_cap_mb=25)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        self.marks: dict[str, float] = {}
        self.rows: list[list[float]] = []
        self.optimizer: list[tuple[float, float]] = []  # (CPU, wall) ms

        def hook(_state, bucket):
            buf = bucket.buffer()
            buf.div_(world)
            self.marks["issue"] = time.perf_counter()

            def finished(fut):
                self.marks["done"] = time.perf_counter()
                return fut.value()[0]

            return dist.all_reduce(buf, group=group, async_op=True).get_future().then(finished)

        self.model.register_comm_hook(None, hook)

    def step(self, x: torch.Tensor, y: torch.Tensor, loss_fn: nn.Module) -> None:
        t0 = time.perf_counter()
        loss = loss_fn(self.model(x), y)
        tf = time.perf_counter()
        loss.backward()
        tb, cb = time.perf_counter(), time.thread_time()
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        t1, c1 = time.perf_counter(), time.thread_time()
        self.rows.append([t0, tf, self.marks["issue"], self.marks["done"], tb, t1])
        self.optimizer.append((1e3 * (c1 - cb), 1e3 * (t1 - tb)))


def summarize(all_rows: torch.Tensor) -> dict[str, float]:
    """all_rows: rank x step x FIELDS, seconds. Medians over steps, ms from the first start."""
    t0 = all_rows[:, :, 0].min(0).values
    rel = {f: (all_rows[:, :, i] - t0) * 1e3 for i, f in enumerate(FIELDS)}

    def med(v: torch.Tensor) -> float:
        return statistics.median(v.tolist())

    return {
        "forward_last": med(rel["forward"].max(0).values),
        "issue_first": med(rel["issue"].min(0).values),
        "issue_last": med(rel["issue"].max(0).values),
        "done_first": med(rel["done"].min(0).values),
        "done_last": med(rel["done"].max(0).values),
        "allreduce_from_last_issue": med(rel["done"].max(0).values - rel["issue"].max(0).values),
        "backward_last": med(rel["backward"].max(0).values),
        "step_last": med(rel["step"].max(0).values),
        "per_rank": {f: [med(v[r]) for r in range(v.shape[0])] for f, v in rel.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", help="write the figures here (rank 0)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("hccl_go")
    rank, world = dist.get_rank(), dist.get_world_size()
    control = dist.new_group(backend="gloo")
    runs = {"hccl_go": Run(dist.group.WORLD, world), "gloo": Run(dist.new_group(backend="gloo"), world)}
    g = torch.Generator().manual_seed(1 + rank)
    x, y = torch.randn(8, 1024, generator=g), torch.randint(0, 10, (8,), generator=g)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(args.warmup + args.steps):
        for run in runs.values():
            dist.barrier(group=control)
            run.step(x, y, loss_fn)
    out: dict[str, dict] = {}
    for name, run in runs.items():
        rows = torch.tensor(run.rows[args.warmup :], dtype=torch.float64)
        gathered = [torch.zeros_like(rows) for _ in range(world)]
        dist.all_gather(gathered, rows, group=control)
        opt = torch.tensor([[statistics.median(c for c, _ in run.optimizer[args.warmup :]),
                             statistics.median(w for _, w in run.optimizer[args.warmup :])]], dtype=torch.float64)
        opts = [torch.zeros_like(opt) for _ in range(world)]
        dist.all_gather(opts, opt, group=control)
        out[name] = summarize(torch.stack(gathered))
        out[name]["optimizer_cpu_wall_ms_per_rank"] = [o[0].tolist() for o in opts]
    if rank == 0:
        print(
            f"# DDP step timeline, world {world}, {args.steps} steps after {args.warmup}; "
            "ms from the first rank's start, medians"
        )
        print(
            f"{'backend':>8} {'fwd':>6} {'issued 1st/last':>15} {'done 1st/last':>15} {'ar':>6} {'bwd':>6} "
            f"{'step':>6}   optimizer CPU/wall per rank"
        )
        for name, s in out.items():
            opt = " ".join(f"{c:.1f}/{w:.1f}" for c, w in s["optimizer_cpu_wall_ms_per_rank"])
            print(f"{name:>8} {s['forward_last']:6.1f} {s['issue_first']:7.1f}/{s['issue_last']:<7.1f} "
                  f"{s['done_first']:7.1f}/{s['done_last']:<7.1f} {s['allreduce_from_last_issue']:6.1f} "
                  f"{s['backward_last']:6.1f} {s['step_last']:6.1f}   {opt}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"world_size": world, "steps": args.steps, "warmup": args.warmup,
                           "date": time.strftime("%Y-%m-%d"), "results": out}, f, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
