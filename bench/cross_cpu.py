"""The machine's cross-CPU state over time, with no collective library involved.

Two processes pinned to two CPUs hand a counter back and forth through one shared cache
line (python/torch_hccl_go/bench/handoff.py, the probe the benchmark reads around every
batch), every --interval seconds for --seconds, and print the readings as a timeline: '.'
for a reading within 2x the fastest, 'S' above it. On a VM the two vCPUs may run on cores
that share a cache or on cores that do not, and the host moves them between the two; a
shared-memory collective slows 3-5x in the second state.

    .venv/bin/python bench/cross_cpu.py --seconds 60 [--cpus 0,1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time

from torch_hccl_go.bench import handoff
from torch_hccl_go.bench.spread import SLOW_HANDOFF


def _side(rank: int, cpu: int, token: str, barrier, seconds: float, interval: float, out) -> None:
    os.sched_setaffinity(0, {cpu})
    probe = handoff.Handoff(rank, True, token, barrier.wait)
    readings = []
    try:
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            barrier.wait()
            readings.append((time.monotonic() - start, probe.measure()))
            time.sleep(interval)
    finally:
        probe.close()
    if rank == 0:
        out.put(readings)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--interval", type=float, default=0.05)
    p.add_argument("--cpus", default="0,1", help="the two CPUs to pin the sides to")
    p.add_argument("--json", dest="json_path")
    args = p.parse_args()
    cpus = [int(c) for c in args.cpus.split(",")]
    ctx = mp.get_context("spawn")
    token, barrier, out = f"watch_{os.getpid()}_{time.time_ns()}", ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_side, args=(r, cpus[r], token, barrier, args.seconds, args.interval, out)) for r in (0, 1)
    ]
    for proc in procs:
        proc.start()
    readings = out.get(timeout=args.seconds + 60)
    for proc in procs:
        proc.join()
    values = [ns for _, ns in readings if ns is not None]
    limit = SLOW_HANDOFF * min(values)
    marks = "".join("?" if ns is None else ("S" if ns > limit else ".") for _, ns in readings)
    fast = [ns for ns in values if ns <= limit]
    slow = [ns for ns in values if ns > limit]
    print(f"# cross-CPU round trip, CPUs {cpus[0]} and {cpus[1]}, {len(readings)} readings over {args.seconds:g} s")
    # The fastest reading stands for the fast state only if the run saw it: compare runs.
    lowest, median = min(values), statistics.median(fast)
    print(f"# within {SLOW_HANDOFF:g}x the fastest ({lowest:.0f} ns): {len(fast)} readings, median {median:.0f} ns")
    if slow:
        share, median = 100 * len(slow) / len(values), statistics.median(slow)
        print(f"# above (> {limit:.0f} ns): {len(slow)} readings ({share:.0f}%), median {median:.0f} ns")
    for i in range(0, len(marks), 100):
        print(marks[i : i + 100])
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"cpus": cpus, "interval_s": args.interval, "readings": readings}, f)


if __name__ == "__main__":
    main()
