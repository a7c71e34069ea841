"""Open MPI's collectives through mpi4py on numpy float32 buffers, timed by the rules of
`python -m torch_hccl_go.bench`, which runs it under mpirun for `--peers mpi` (peers/mpi.py).
By hand, one process per rank:

    mpirun -n 2 --bind-to none --mca pml ob1 --mca btl self,vader \\
        .venv/bin/python python/torch_hccl_go/bench/peers/mpi_program.py --sizes 8,64K,16M --json mpi.json

It runs as a script, outside the torch_hccl_go package: importing the package loads torch
and starts the Go runtime, whose monitor thread would share the cores with the MPI ranks
being timed. It does use the benchmark's own standard-library modules (timing, history,
handoff, results, report, sizes, counts), loaded straight from their folder, so its rules are the
same code as hccl_go's and gloo's:
- size: bytes of the largest buffer of one rank, count: its elements (counts.py);
- a check of one iteration, warm-up, a steady per-iteration estimate, then batches framed
  by a barrier, each after a rewarm (timing.settle, timing.time_batch); time = median over
  batches of the slowest rank's per-iteration time (results.py); a few batches of a local
  copy of the input between them (timing.memcpy_rounds; numpy's copy here), and the
  cross-CPU hand-off between ranks 0 and 1 around every batch (handoff.py);
- --history: the same conditions and per-op rule (history.py), compute bursts as numpy
  matmuls;
- inputs v(rank, i) = (i + 3 rank) % 7 + 1, as ops.input_values; every result is checked
  once, exactly.

Buffers as the torch bench's (ops.py): all_reduce, broadcast and reduce in place
(MPI.IN_PLACE on the root of a reduce, as dist.reduce(tensor) is); all_gather,
reduce_scatter and all_to_all out of place, as dist.all_gather_into_tensor,
dist.reduce_scatter_tensor and dist.all_to_all_single are. Reductions are sums.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import types
from pathlib import Path

import numpy as np
from mpi4py import MPI

BENCH_DIR = Path(__file__).resolve().parents[1]  # python/torch_hccl_go/bench


def _import_bench_modules() -> None:
    """Makes torch_hccl_go.bench.<module> importable without running the __init__ of
    torch_hccl_go or torch_hccl_go.bench (which import torch): empty packages that only say
    where the files are. Only standard-library modules of the benchmark are imported."""
    for name, path in (("torch_hccl_go", BENCH_DIR.parent), ("torch_hccl_go.bench", BENCH_DIR)):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            sys.modules[name] = package


_import_bench_modules()
counts = importlib.import_module("torch_hccl_go.bench.counts")
handoff = importlib.import_module("torch_hccl_go.bench.handoff")
history = importlib.import_module("torch_hccl_go.bench.history")
report = importlib.import_module("torch_hccl_go.bench.report")
results = importlib.import_module("torch_hccl_go.bench.results")
sizes = importlib.import_module("torch_hccl_go.bench.sizes")
timing = importlib.import_module("torch_hccl_go.bench.timing")

NAME = "mpi"
CHUNK = 7 << 19  # elements per fill/check step: a multiple of the input pattern's period, 7
DTYPE = np.float32
BUS_FACTOR = {
    "all_reduce": counts.all_reduce_factor,
    "all_gather": counts.spread_factor,
    "reduce_scatter": counts.spread_factor,
    "broadcast": counts.one,
    "all_to_all": counts.spread_factor,
    "reduce": counts.one,
}
SPLIT_OPS = ("all_gather", "reduce_scatter", "all_to_all")  # buffers cut in world shares; the rest in place
BY_SOURCE_OPS = ("all_gather", "all_to_all")  # the output is a segment per source rank
ROOTED_OPS = ("broadcast", "reduce")
REDUCING_OPS = ("all_reduce", "reduce_scatter", "reduce")
COMPUTE_SIDE = 128  # --history compute bursts: matmuls of this square size


def pattern(rank: int, start: int, n: int) -> np.ndarray:
    """v(rank, i) for i in [start, start+n), as float32."""
    i = np.arange(start, start + n, dtype=np.int64)
    return ((i + 3 * rank) % 7 + 1).astype(DTYPE)


def fill(buf: np.ndarray, rank: int) -> None:
    period = pattern(rank, 0, min(CHUNK, buf.size))
    for start in range(0, buf.size, CHUNK):
        end = min(start + CHUNK, buf.size)
        buf[start:end] = period[: end - start]


class Case:
    """One op at one size, with its buffers and call on this rank."""

    def __init__(self, comm: MPI.Comm, op: str, size: int, root: int):
        self.comm, self.op, self.rank, self.world = comm, op, comm.Get_rank(), comm.Get_size()
        shares = self.world if op in SPLIT_OPS else 1
        self.count = counts.element_count(size, DTYPE().itemsize, shares)
        self.share = self.count // self.world
        self.root = root if op in ROOTED_OPS else -1
        inp = self.share if op == "all_gather" else self.count
        out = self.share if op == "reduce_scatter" else self.count
        self.inp = np.empty(inp, DTYPE)
        self.out = np.empty(out, DTYPE) if op in SPLIT_OPS else self.inp

    @property
    def size(self) -> int:
        return self.count * DTYPE().itemsize

    def reset(self) -> None:
        fill(self.inp, self.rank)
        if self.out is not self.inp:
            self.out[:] = 0

    def run(self) -> None:
        inp, out, comm = [self.inp, MPI.FLOAT], [self.out, MPI.FLOAT], self.comm
        if self.op == "all_reduce":
            comm.Allreduce(MPI.IN_PLACE, inp, op=MPI.SUM)
        elif self.op == "all_gather":
            comm.Allgather(inp, out)
        elif self.op == "reduce_scatter":
            comm.Reduce_scatter_block(inp, out, op=MPI.SUM)
        elif self.op == "broadcast":
            comm.Bcast(inp, root=self.root)
        elif self.op == "all_to_all":
            comm.Alltoall(inp, out)
        elif self.rank == self.root:  # reduce
            comm.Reduce(MPI.IN_PLACE, inp, op=MPI.SUM, root=self.root)
        else:
            comm.Reduce(inp, None, op=MPI.SUM, root=self.root)

    def expected(self, seg: int, start: int, n: int) -> np.ndarray | None:
        """The exact output of segment seg, elements [start, start+n) of it; None where the
        output is unspecified (reduce off the root)."""

        def total(offset: int) -> np.ndarray:
            return sum(pattern(r, offset, n).astype(np.float64) for r in range(self.world)).astype(DTYPE)

        if self.op == "all_reduce":
            return total(start)
        if self.op == "reduce":
            return total(start) if self.rank == self.root else None
        if self.op == "all_gather":
            return pattern(seg, start, n)
        if self.op == "reduce_scatter":
            return total(self.rank * self.share + start)
        if self.op == "all_to_all":
            return pattern(seg, self.rank * self.share + start, n)
        return pattern(self.root, start, n)

    def wrong(self) -> int:
        """Elements of this rank's output that differ from the exact reference."""
        segments = self.world if self.op in BY_SOURCE_OPS else 1
        length = self.out.size // segments
        wrong = 0
        for seg in range(segments):
            part = self.out[seg * length : (seg + 1) * length]
            for start in range(0, length, CHUNK):
                got = part[start : start + CHUNK]
                expected = self.expected(seg, start, got.size)
                if expected is not None:
                    wrong += int(np.count_nonzero(got != expected))
        return wrong


class Sweep:
    """The cases in order on this rank; `control` (a duplicate of the world communicator)
    carries the figures the ranks agree on, as the torch bench's default group does."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.comm = MPI.COMM_WORLD
        self.control = self.comm.Dup()
        self.world = self.comm.Get_size()
        hosts = self.control.allgather(history.host_identity())
        self.shared_clock = len(set(hosts)) == 1
        token = self.control.bcast(f"{os.getpid()}_{time.time_ns()}", root=0)
        self.handoff = handoff.Handoff(self.comm.Get_rank(), len(set(hosts[:2])) == 1, token, self.control.Barrier)
        self.small = np.zeros(2, DTYPE)  # --history: the 8-byte all_reduce (zeros stay zeros)
        self.floor = np.zeros(2, DTYPE)  # --history: the floor op (history.py)
        self.square = np.ones((COMPUTE_SIDE, COMPUTE_SIDE), DTYPE)
        self.product = np.empty_like(self.square)

    def max_over_ranks(self, values: list[float]) -> list[float]:
        buf = np.array(values, dtype=np.float64)
        self.control.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
        return buf.tolist()

    def measure(self, case: Case) -> results.Result:
        args = self.args
        result = results.Result(
            backend=NAME,
            op=case.op,
            dtype="float32",
            redop="sum" if case.op in REDUCING_OPS else "none",
            root=case.root,
            world=self.world,
            size=case.size,
            count=case.count,
            bus_factor=BUS_FACTOR[case.op](self.world),
        )
        case.reset()
        self.control.Barrier()
        t0 = time.perf_counter()
        case.run()
        first = time.perf_counter() - t0
        result.wrong = self.control.allreduce(case.wrong(), op=MPI.SUM) if args.check else None
        first = self.max_over_ranks([first])[0]
        plan = timing.settle(
            case.run, first, args.warmup, args.iters, args.max_time, args.rewarm_ms / 1e3, self.max_over_ranks
        )
        # Now and then the machine's own pace, as the torch bench times it: a local copy of
        # the input (numpy's here), every rank at once.
        scratch = np.empty_like(case.inp)

        def memcpy() -> None:
            np.copyto(scratch, case.inp)

        times, memcpy_times, memcpy_rounds = [], [], timing.memcpy_rounds(plan.batches)
        handoff_ns = [self.handoff.measure()]
        for batch in range(plan.batches):
            times.append(timing.time_batch(case.run, plan.iters_per_batch, self.comm.Barrier, plan.rewarm))
            if batch in memcpy_rounds:
                memcpy_times.append(timing.time_batch(memcpy, plan.iters_per_batch, self.control.Barrier, plan.rewarm))
            handoff_ns.append(self.handoff.measure())
        result.handoff_ns = handoff_ns
        result.iters_per_batch, result.rewarm_iters = plan.iters_per_batch, plan.rewarm
        result.batch_times = self.max_over_ranks(times)
        result.memcpy_times = self.max_over_ranks(memcpy_times)
        if args.history:
            result.history = self.history(case, result.time_s, max(1, plan.rewarm))
        return result

    def history(self, case: Case, per_op_s: float, same_op_iters: int) -> dict[str, list[float]]:
        actions = history.Actions(
            op=case.run,
            small_op=lambda: self.comm.Allreduce(MPI.IN_PLACE, [self.small, MPI.FLOAT], op=MPI.SUM),
            compute_step=lambda: np.matmul(self.square, self.square, out=self.product),
            sync=self.control.Barrier,
            same_op_iters=same_op_iters,
            floor_op=lambda: np.add(self.floor, 1, out=self.floor),
        )
        out = {}
        for cond in history.CONDITIONS:
            reps = history.repetitions(cond, per_op_s, self.args.max_time)
            stamps = [history.time_repetition(cond, actions) for _ in range(reps)]
            every = self.control.allgather(stamps)  # [rank][repetition]
            out[cond.name], out[history.floor_key(cond.name)] = history.split_times(every, self.shared_clock)
        return out

    def run(self) -> list[results.Result]:
        rows = []
        for op in self.args.ops:
            seen = set()
            for size in self.args.sizes:
                case = Case(self.comm, op, size, self.args.root)
                if case.count not in seen:
                    seen.add(case.count)
                    rows.append(self.measure(case))
        return rows


def library_version() -> str:
    """The MPI library's own description (Open MPI ends it with a NUL)."""
    return MPI.Get_library_version().strip("\x00 \n")


def environment() -> dict:
    """What was measured: the MPI library, mpi4py, and the MCA choices mpirun passed down."""
    import mpi4py

    mca = {k: v for k, v in os.environ.items() if re.match(r"OMPI_MCA_(pml|btl|coll|mtl|osc)", k)}
    return {
        "mpi_library": library_version(),
        "mpi_version": ".".join(str(v) for v in MPI.Get_version()),
        "mpi4py": mpi4py.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "mca": mca,
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default="all_reduce", help=f"comma list of {', '.join(BUS_FACTOR)} (default all_reduce)")
    p.add_argument("--sizes", default="8,64K,16M,128M", help="as the torch bench's --sizes (default 8,64K,16M,128M)")
    p.add_argument("--root", type=int, default=0, help="root of broadcast (default 0)")
    p.add_argument("--warmup", type=int, default=5, help="untimed iterations per size (default 5)")
    p.add_argument("--iters", default="auto", help="timed iterations per size, or 'auto' (default)")
    p.add_argument("--max-time", type=float, default=1.0, help="auto: seconds of timed iterations per size")
    p.add_argument("--rewarm-ms", type=float, default=5.0, help="untimed iterations before each batch (default 5)")
    p.add_argument("--check", action=argparse.BooleanOptionalAction, default=True, help="check results once")
    p.add_argument("--history", action=argparse.BooleanOptionalAction, default=False, help="time ops after conditions")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write every figure to this JSON file")
    a = p.parse_args(argv)
    a.argv = argv
    try:
        a.ops = [o.strip() for o in a.ops.split(",") if o.strip()]
        unknown = [o for o in a.ops if o not in BUS_FACTOR]
        if unknown:
            raise ValueError(f"unknown ops {unknown}: want {', '.join(BUS_FACTOR)}")
        a.sizes = sizes.parse_sizes(a.sizes)
        a.iters = None if a.iters == "auto" else int(a.iters)
    except ValueError as e:
        p.error(str(e))
    if a.warmup < 0 or a.max_time <= 0 or a.rewarm_ms < 0 or (a.iters is not None and a.iters < 1):
        p.error("--warmup and --rewarm-ms must be >= 0, --iters and --max-time positive")
    return a


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    rank, world = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    if args.root >= world:
        if rank == 0:
            print(f"--root {args.root} is not a rank of a world of {world}", file=sys.stderr)
        return 2
    sweep = Sweep(args)
    try:
        rows = sweep.run()
    finally:
        sweep.handoff.close()
    if rank != 0:
        return 0
    print(f"# {library_version()}; mpi4py; world {world}")
    report.print_report(rows, (NAME,), sys.stdout)
    if args.json_path:
        doc = {
            "command": " ".join([Path(__file__).name, *args.argv]),
            "world_size": world,
            "environment": environment(),
            "backend_info": {NAME: environment()},
            "units": {"size": "bytes", "time_us": "microseconds, median over batches of the slowest rank"},
            "results": [r.to_json() for r in rows],
        }
        with open(args.json_path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 1 if any(r.wrong for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
