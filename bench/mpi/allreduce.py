"""Open MPI's collectives on numpy float32 buffers, timed as `python -m torch_hccl_go.bench` times
hccl_go and gloo, so that the three can sit in one table (scripts/mpi_bench.sh).

Run it under mpirun, one process per rank:

    mpirun -n 2 --bind-to none --mca pml ob1 --mca btl self,vader \
        .venv/bin/python bench/mpi/allreduce.py --sizes 8,64K,16M,128M --json mpi.json

It copies the definitions of python/torch_hccl_go/bench (it does not import them, so that no
torch is loaded next to MPI):
- size: bytes of the largest buffer of one rank (all_reduce and broadcast: the one in-place
  buffer; all_gather: the output), count: its elements, rounded down to whole shares;
- iterations run in batches framed by a barrier; a batch's per-iteration time is its time over
  its iterations; time = median over batches of the slowest rank's per-iteration time;
- adaptive plan: batches of about 10 ms, as many as fit in --max-time (3 to 50), after a
  warm-up kept within a quarter of --max-time; --iters N: N iterations in min(N, 10) batches;
- algbw = size / time (1e9 bytes/s); busbw = algbw x bus factor, as nccl-tests: all_reduce
  2(n-1)/n, all_gather (n-1)/n, broadcast 1;
- inputs v(rank, i) = (i + 3 rank) % 7 + 1; every result is checked once, exactly.

all_reduce is in place (MPI.IN_PLACE), as the torch bench's dist.all_reduce(tensor) is;
all_gather is out of place, as dist.all_gather_into_tensor is.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

BATCH_TARGET_S = 0.010
MIN_BATCHES = 3
MAX_BATCHES = 50
FIXED_MAX_BATCHES = 10
CHUNK = 7 << 19  # elements per fill/check step: a multiple of the input pattern's period, 7
DTYPE = np.float32

BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(I?B)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    op: str
    world: int
    count: int  # elements of the largest buffer of a rank
    root: int

    @property
    def size(self) -> int:
        return self.count * DTYPE().itemsize

    @property
    def share(self) -> int:
        return self.count // self.world


def parse_sizes(text: str) -> list[int]:
    """Bytes from a comma list of "8", "64K", "16MiB" (binary units, as the torch bench)."""
    sizes = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = _SIZE.match(part)
        if not m:
            raise ValueError(f"bad size {part!r}: want a number with an optional unit B, K, M, G")
        sizes.add(int(m.group(1)) * _UNITS[m.group(2).upper()])
    if not sizes or min(sizes) <= 0:
        raise ValueError(f"want positive sizes, got {text!r}")
    return sorted(sizes)


def make_case(op: str, world: int, size: int, root: int) -> Case:
    unit = world if op == "all_gather" else 1
    count = max(unit, size // DTYPE().itemsize // unit * unit)
    return Case(op, world, count, root if op == "broadcast" else -1)


def pattern(rank: int, start: int, n: int) -> np.ndarray:
    """v(rank, i) for i in [start, start+n), as float32."""
    i = np.arange(start, start + n, dtype=np.int64)
    return ((i + 3 * rank) % 7 + 1).astype(DTYPE)


def fill(buf: np.ndarray, rank: int) -> None:
    period = pattern(rank, 0, min(CHUNK, buf.size))
    for start in range(0, buf.size, CHUNK):
        end = min(start + CHUNK, buf.size)
        buf[start:end] = period[: end - start]


class Runner:
    """The buffers and the call of one case on this rank."""

    def __init__(self, comm: MPI.Comm, case: Case):
        self.comm, self.case, self.rank = comm, case, comm.Get_rank()
        if case.op == "all_gather":
            self.inp = np.empty(case.share, DTYPE)
            self.out = np.empty(case.count, DTYPE)
        else:
            self.inp = self.out = np.empty(case.count, DTYPE)

    def reset(self) -> None:
        fill(self.inp, self.rank)
        if self.out is not self.inp:
            self.out[:] = 0

    def run(self) -> None:
        if self.case.op == "all_reduce":
            self.comm.Allreduce(MPI.IN_PLACE, [self.inp, MPI.FLOAT], op=MPI.SUM)
        elif self.case.op == "all_gather":
            self.comm.Allgather([self.inp, MPI.FLOAT], [self.out, MPI.FLOAT])
        else:
            self.comm.Bcast([self.inp, MPI.FLOAT], root=self.case.root)

    def wrong(self) -> int:
        """Elements of this rank's output that differ from the exact reference."""
        case, out = self.case, self.out
        segments = case.world if case.op == "all_gather" else 1
        length = out.size // segments
        wrong = 0
        for seg in range(segments):
            n = min(CHUNK, length)
            if case.op == "all_reduce":
                expected = sum(pattern(r, 0, n).astype(np.float64) for r in range(case.world)).astype(DTYPE)
            elif case.op == "all_gather":
                expected = pattern(seg, 0, n)
            else:
                expected = pattern(case.root, 0, n)
            part = out[seg * length : (seg + 1) * length]
            for start in range(0, length, CHUNK):
                got = part[start : start + CHUNK]
                wrong += int(np.count_nonzero(got != expected[: got.size]))
        return wrong


def plan(per_iter_s: float, iters: int | None, max_time: float) -> tuple[int, int]:
    """(iterations per batch, batches), as torch_hccl_go/bench/timing.py plans them."""
    if iters is not None:
        batches = min(iters, FIXED_MAX_BATCHES)
        return math.ceil(iters / batches), batches
    per_iter_s = max(per_iter_s, 1e-7)
    per_batch = max(1, int(min(BATCH_TARGET_S, max_time / MIN_BATCHES) / per_iter_s))
    batches = int(max_time / (per_batch * per_iter_s))
    return per_batch, min(MAX_BATCHES, max(MIN_BATCHES, batches))


def max_over_ranks(comm: MPI.Comm, values: list[float]) -> list[float]:
    buf = np.array(values, dtype=np.float64)
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
    return buf.tolist()


def measure(comm: MPI.Comm, case: Case, args: argparse.Namespace) -> dict:
    """Checks the case once, warms up, times its batches; the result row (the torch bench's
    --json row, with backend "mpi")."""
    r = Runner(comm, case)
    r.reset()
    comm.Barrier()
    t0 = time.perf_counter()
    r.run()
    first = time.perf_counter() - t0
    wrong = comm.allreduce(r.wrong(), op=MPI.SUM) if args.check else None
    first = max_over_ranks(comm, [first])[0]
    warm = args.warmup if args.iters is not None else min(args.warmup, int(args.max_time / 4 / max(first, 1e-7)))
    times = []
    for _ in range(warm):
        t0 = time.perf_counter()
        r.run()
        times.append(time.perf_counter() - t0)
    estimate = max_over_ranks(comm, [statistics.median(times) if times else first])[0]
    per_batch, batches = plan(estimate, args.iters, args.max_time)
    batch_times = []
    for _ in range(batches):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(per_batch):
            r.run()
        batch_times.append((time.perf_counter() - t0) / per_batch)
    batch_times = max_over_ranks(comm, batch_times)
    t = statistics.median(batch_times)
    factor = BUS_FACTOR[case.op](case.world)
    return {
        "backend": "mpi",
        "op": case.op,
        "dtype": "float32",
        "redop": "sum" if case.op == "all_reduce" else "none",
        "root": case.root,
        "world": case.world,
        "size": case.size,
        "count": case.count,
        "bus_factor": factor,
        "status": "ok",
        "reason": "",
        "wrong": wrong,
        "iters_per_batch": per_batch,
        "time_us": t * 1e6,
        "algbw_GBps": case.size / t / 1e9,
        "busbw_GBps": case.size / t / 1e9 * factor,
        "batch_times_us": [x * 1e6 for x in batch_times],
        "time_us_min": min(batch_times) * 1e6,
        "time_us_max": max(batch_times) * 1e6,
    }


def print_table(rows: list[dict], out=sys.stdout) -> None:
    op = None
    for row in rows:
        if row["op"] != op:
            op = row["op"]
            print(f"\n# {op}  float32  redop {row['redop']}  world {row['world']}\n#\n# backend mpi", file=out)
            print(
                f"#{'size':>11} {'count':>13} {'type':>9} {'redop':>6} {'root':>5} {'time':>11} {'algbw':>8} "
                f"{'busbw':>8} {'#wrong':>7}\n"
                f"#{'(B)':>11} {'(elements)':>13} {'':>9} {'':>6} {'':>5} {'(us)':>11} {'(GB/s)':>8} {'(GB/s)':>8}",
                file=out,
            )
        wrong = "-" if row["wrong"] is None else str(row["wrong"])
        print(
            f" {row['size']:>11} {row['count']:>13} {row['dtype']:>9} {row['redop']:>6} {row['root']:>5} "
            f"{row['time_us']:11.2f} {row['algbw_GBps']:8.2f} {row['busbw_GBps']:8.2f} {wrong:>7}",
            file=out,
        )


def library_version() -> str:
    """The MPI library's own description (Open MPI ends it with a NUL)."""
    return MPI.Get_library_version().strip("\x00 \n")


def environment() -> dict:
    """What was measured: the MPI library, mpi4py, and the MCA choices mpirun passed down."""
    import mpi4py

    mca = {k: v for k, v in os.environ.items() if re.match(r"OMPI_MCA_(pml|btl|coll|mtl|osc)", k)}
    return {
        "mpi_library": library_version(),
        "mpi_version": "%d.%d" % MPI.Get_version(),
        "mpi4py": mpi4py.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "mca": mca,
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default="all_reduce", help=f"comma list of {', '.join(BUS_FACTOR)} (default all_reduce)")
    p.add_argument("--sizes", default="8,64K,16M,128M", help="comma list, binary units (default 8,64K,16M,128M)")
    p.add_argument("--root", type=int, default=0, help="root of broadcast (default 0)")
    p.add_argument("--warmup", type=int, default=5, help="untimed iterations per size (default 5)")
    p.add_argument("--iters", default="auto", help="timed iterations per size, or 'auto' (default)")
    p.add_argument("--max-time", type=float, default=1.0, help="auto: seconds of timed iterations per size")
    p.add_argument("--check", action=argparse.BooleanOptionalAction, default=True, help="check results once")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write every figure to this JSON file")
    a = p.parse_args(argv)
    a.argv = argv
    try:
        a.ops = [o.strip() for o in a.ops.split(",") if o.strip()]
        unknown = [o for o in a.ops if o not in BUS_FACTOR]
        if unknown:
            raise ValueError(f"unknown ops {unknown}: want {', '.join(BUS_FACTOR)}")
        a.sizes = parse_sizes(a.sizes)
        a.iters = None if a.iters == "auto" else int(a.iters)
    except ValueError as e:
        p.error(str(e))
    if a.warmup < 0 or a.max_time <= 0 or (a.iters is not None and a.iters < 1):
        p.error("--warmup must be >= 0, --iters and --max-time positive")
    return a


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    if args.root >= world:
        if rank == 0:
            print(f"--root {args.root} is not a rank of a world of {world}", file=sys.stderr)
        return 2
    rows = []
    for op in args.ops:
        seen = set()
        for size in args.sizes:
            case = make_case(op, world, size, args.root)
            if case not in seen:
                seen.add(case)
                rows.append(measure(comm, case, args))
    if rank != 0:
        return 0
    print(f"# {library_version()}; mpi4py; world {world}")
    print_table(rows)
    if args.json_path:
        doc = {
            "command": " ".join(["bench/mpi/allreduce.py", *args.argv]),
            "world_size": world,
            "environment": environment(),
            "units": {"size": "bytes", "time_us": "microseconds, median over batches of the slowest rank"},
            "results": rows,
        }
        with open(args.json_path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 1 if any(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
