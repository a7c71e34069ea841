"""How much of DDP's gradient traffic hides behind backward, hccl_go against gloo.

    torchrun --nproc_per_node 2 -m torch_hccl_go.overlap [--steps 20]
    examples/overlap_netns.sh      # two emulated hosts joined by a shaped link

Every rank runs the same model. For each backend, interleaved run by run:

- compute: a training step under DDP's no_sync() (no communication);
- comm:    the buckets DDP all-reduces in one step (same sizes, same order),
           issued back to back and waited for, with no compute;
- step:    a DDP training step (buckets launched from autograd hooks travel
           while backward goes on; the reducer waits at the end);
- overlap efficiency = (compute + comm - step) / min(compute, comm):
           1 when the shorter of the two hides completely, 0 when nothing does.

A phase's time per run is the slowest rank's (every rank's times are
gathered over a gloo control group): a DDP step waits for the slowest rank,
so rank 0's compute alone would understate compute and the efficiency.
Each rank's compute median is reported too.

One traced step (a comm hook that timestamps each bucket) shows when each
bucket was issued and completed, relative to the start of backward and to
the last gradient (the end of backward's compute).

Run one process per rank with the env:// variables (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), as torchrun sets them. hccl_go settings come from
HCCL_GO_* variables (HCCL_GO_MAXPROCS caps the Go runtime's threads); gloo's
interface from GLOO_SOCKET_IFNAME.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_hccl_go  # noqa: F401  (registers the backend)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m torch_hccl_go.overlap", description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="hccl_go,gloo", help="comma-separated, compared in the same run")
    p.add_argument(
        "--model",
        choices=["cnn", "mlp"],
        default="cnn",
        help="cnn: conv layers (most compute, few parameters) under a fully connected head (most "
        "parameters), the shape that lets gradients travel during backward; mlp: equal layers",
    )
    p.add_argument("--channels", type=int, default=64, help="cnn: channels of the first conv block (x2 in the second)")
    p.add_argument("--image", type=int, default=32, help="cnn: image side")
    p.add_argument("--width", type=int, default=96, help="hidden width of the head (cnn) or of every layer (mlp)")
    p.add_argument("--depth", type=int, default=6, help="mlp: hidden layers")
    p.add_argument("--inputs", type=int, default=64, help="mlp: input features")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument(
        "--bucket-cap-mb",
        type=float,
        default=0.25,
        help="DDP bucket_cap_mb (small buckets: the last one, issued when backward ends, is all that cannot hide)",
    )
    p.add_argument("--steps", type=int, default=20, help="timed runs of each phase per backend")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    p.add_argument("--stream", default=None, help="hccl_go stream of the DDP group: default|high|index")
    p.add_argument("--json", default="", help="rank 0 writes the results here")
    return p.parse_args(argv)


def build_model(args: argparse.Namespace) -> nn.Module:
    torch.manual_seed(0)
    if args.model == "mlp":
        layers: list[nn.Module] = [nn.Linear(args.inputs, args.width), nn.ReLU()]
        for _ in range(args.depth):
            layers += [nn.Linear(args.width, args.width), nn.ReLU()]
        layers.append(nn.Linear(args.width, 10))
        return nn.Sequential(*layers)
    c = args.channels

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [
            nn.Conv2d(cin, cout, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        ]

    side = args.image // 4
    return nn.Sequential(
        *block(3, c),
        *block(c, 2 * c),
        nn.Flatten(),
        nn.Linear(2 * c * side * side, args.width),
        nn.ReLU(),
        nn.Linear(args.width, 10),
    )


def describe_model(args: argparse.Namespace) -> str:
    if args.model == "mlp":
        return f"MLP {args.inputs}->{args.depth}x{args.width}->10"
    return f"CNN 2x2 conv {args.channels}/{2 * args.channels} ch on {args.image}x{args.image}, head {args.width}"


def input_shape(args: argparse.Namespace) -> tuple[int, ...]:
    if args.model == "mlp":
        return (args.batch, args.inputs)
    return (args.batch, 3, args.image, args.image)


@dataclass
class Phase:
    """Seconds per run of one phase."""

    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # process CPU seconds (every thread) per run

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


@dataclass
class BucketTrace:
    numel: int
    issued_ms: float  # from the start of backward
    done_ms: float


PHASES = ("compute", "comm", "step")


@dataclass
class Result:
    backend: str
    compute: Phase = field(default_factory=Phase)  # samples: max over ranks, run by run (after gather_ranks)
    comm: Phase = field(default_factory=Phase)
    step: Phase = field(default_factory=Phase)
    per_rank: dict[str, list[list[float]]] = field(default_factory=dict)  # phase -> rank -> seconds per run
    buckets: list[BucketTrace] = field(default_factory=list)
    backward_compute_ms: float = 0.0  # start of backward to the last bucket's issue

    def rank_medians(self, phase: str) -> list[float]:
        return [statistics.median(s) for s in self.per_rank.get(phase, [])]

    def efficiency(self) -> float:
        compute, comm, step = self.compute.median, self.comm.median, self.step.median
        return (compute + comm - step) / max(min(compute, comm), 1e-9)


class Bench:
    """One backend's DDP model, optimizer, batch and bucket list."""

    def __init__(self, args: argparse.Namespace, backend: str, group: dist.ProcessGroup, rank: int):
        self.args, self.backend, self.group = args, backend, group
        self.model = DDP(build_model(args), process_group=group, bucket_cap_mb=args.bucket_cap_mb)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(1 + rank)
        self.x = torch.randn(*input_shape(args), generator=g)
        self.y = torch.randint(0, 10, (args.batch,), generator=g)
        self.loss_fn = nn.CrossEntropyLoss()
        self.result = Result(backend)
        self.bucket_numels: list[int] = []

    def train_step(self, sync: bool = True) -> None:
        ctx = self.model.no_sync() if not sync else _nullcontext()
        with ctx:
            loss = self.loss_fn(self.model(self.x), self.y)
            loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)

    def comm_step(self, buffers: list[torch.Tensor]) -> None:
        works = [dist.all_reduce(b, group=self.group, async_op=True) for b in buffers]
        for w in works:
            w.wait()

    def trace(self) -> None:
        """One DDP step with a comm hook that timestamps each bucket (a
        separate DDP instance, so that the timed steps use DDP's own path)."""
        traced = DDP(build_model(self.args), process_group=self.group, bucket_cap_mb=self.args.bucket_cap_mb)
        opt = torch.optim.SGD(traced.parameters(), lr=1e-3)
        marks: list[tuple[int, float, list[float]]] = []
        world = self.group.size()

        def hook(_state, bucket):
            buf = bucket.buffer()
            done: list[float] = []
            marks.append((buf.numel(), time.perf_counter(), done))
            buf.div_(world)

            def finished(fut):
                done.append(time.perf_counter())
                return fut.value()[0]

            return dist.all_reduce(buf, group=self.group, async_op=True).get_future().then(finished)

        traced.register_comm_hook(None, hook)
        for _ in range(self.args.warmup + 1):  # DDP rebuilds its buckets after the first step
            marks.clear()
            dist.barrier(group=self.group)
            loss = self.loss_fn(traced(self.x), self.y)
            start = time.perf_counter()
            loss.backward()
            opt.step()
            opt.zero_grad()
        r = self.result
        r.buckets = [BucketTrace(n, 1e3 * (t - start), 1e3 * (d[0] - start)) for n, t, d in marks]
        r.backward_compute_ms = max(b.issued_ms for b in r.buckets)
        self.bucket_numels = [b.numel for b in r.buckets]

    def phases(self) -> dict[str, callable]:
        buffers = [torch.ones(n) for n in self.bucket_numels]
        return {
            "compute": lambda: self.train_step(sync=False),
            "comm": lambda: self.comm_step(buffers),
            "step": lambda: self.train_step(sync=True),
        }

    def sample(self, name: str, fn) -> None:
        """One timed run of a phase; the ranks start it together."""
        dist.barrier(group=self.group)
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        phase = getattr(self.result, name)
        phase.samples.append(time.perf_counter() - t0)
        phase.cpu.append(time.process_time() - c0)


def gather_ranks(results: list[Result], control: dist.ProcessGroup) -> None:
    """Replaces each phase's samples by the slowest rank's, run by run, and
    keeps every rank's samples in per_rank (CPU times stay this rank's)."""
    mine = [{name: getattr(r, name).samples for name in PHASES} for r in results]
    every: list = [None] * control.size()
    dist.all_gather_object(every, mine, group=control)
    for i, r in enumerate(results):
        for name in PHASES:
            ranks = [every[k][i][name] for k in range(len(every))]
            r.per_rank[name] = ranks
            getattr(r, name).samples = [max(run) for run in zip(*ranks, strict=False)]


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def report(results: list[Result], args: argparse.Namespace, world: int) -> str:
    lines = [
        f"# overlap: world {world}, {describe_model(args)}, batch {args.batch}, "
        f"bucket_cap_mb {args.bucket_cap_mb}, torch threads {torch.get_num_threads()}, "
        f"HCCL_GO_MAXPROCS={os.environ.get('HCCL_GO_MAXPROCS', '(unset)')}",
        f"# {args.steps} interleaved runs per phase, medians (ms) of the slowest rank per run; "
        "step range = its quartiles; CPU: rank 0's",
        f"{'backend':>8} {'compute':>9} {'comm':>9} {'step':>9} {'hidden':>8} {'efficiency':>10} {'step range':>13}"
        f"   CPU ms per run: compute/comm/step   compute median per rank",
    ]
    for r in results:
        c, m, s = (1e3 * p.median for p in (r.compute, r.comm, r.step))
        q = statistics.quantiles(r.step.samples, n=4) if len(r.step.samples) > 1 else [r.step.median] * 3
        lo, hi = 1e3 * q[0], 1e3 * q[2]
        cpu = "/".join(f"{1e3 * statistics.median(p.cpu):.0f}" for p in (r.compute, r.comm, r.step))
        lines.append(
            f"{r.backend:>8} {c:9.1f} {m:9.1f} {s:9.1f} {c + m - s:8.1f} {r.efficiency():10.2f} "
            f"{f'{lo:.0f}-{hi:.0f}':>13}   {cpu:>18}   "
            + "/".join(f"{1e3 * m:.1f}" for m in r.rank_medians("compute"))
        )
    for r in results:
        grads = sum(b.numel for b in r.buckets) * 4
        lines.append(
            f"# {r.backend} traced step: {len(r.buckets)} buckets, {grads / 2**20:.2f} MiB of gradients; "
            f"backward computes until +{r.backward_compute_ms:.1f} ms"
        )
        for i, b in enumerate(r.buckets):
            during = "during backward" if b.done_ms < r.backward_compute_ms else "after backward"
            lines.append(
                f"#   bucket {i}: {b.numel * 4 / 2**20:6.2f} MiB issued +{b.issued_ms:7.1f} ms, "
                f"done +{b.done_ms:7.1f} ms ({during})"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dist.init_process_group("hccl_go", pg_options=torch_hccl_go.Options(stream=args.stream))
    rank, world = dist.get_rank(), dist.get_world_size()
    control = dist.new_group(backend="gloo")  # gathers every rank's times at the end
    benches = []
    for name in args.backends.split(","):
        group = dist.group.WORLD if name == "hccl_go" else dist.new_group(backend=name)
        benches.append(Bench(args, name, group, rank))
    for b in benches:
        b.trace()
    phases = [(b, name, fn) for b in benches for name, fn in b.phases().items()]
    for _, _, fn in phases:
        for _ in range(args.warmup):
            fn()
    # Interleaved step by step, so that drifting load hits every phase and
    # backend alike.
    for _ in range(args.steps):
        for b, name, fn in phases:
            b.sample(name, fn)
    results = [b.result for b in benches]
    gather_ranks(results, control)
    if rank == 0:
        print(report(results, args, world), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                out = {"args": vars(args), "torch_threads": torch.get_num_threads(), "results": []}
                for r in results:
                    d = asdict(r)
                    d.update(
                        compute_ms=1e3 * r.compute.median,
                        comm_ms=1e3 * r.comm.median,
                        step_ms=1e3 * r.step.median,
                        efficiency=r.efficiency(),
                        rank_ms={name: [1e3 * m for m in r.rank_medians(name)] for name in PHASES},
                    )
                    out["results"].append(d)
                json.dump(out, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
