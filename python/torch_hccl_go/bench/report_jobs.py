"""--jobs: the spread table (min, median, max of the per-job medians, the median and
largest op/memcpy ratio, slow jobs) per (op, dtype); beside it the same over the batches
timed in the machine's fast cross-CPU state and the share in its slow state; and per
backend the jobs that were slow, slow beyond the machine's own pace, and slow even in the
machine's fast state (spread.py)."""

from __future__ import annotations

import statistics
from itertools import groupby
from typing import TextIO

from .report import format_us
from .sizes import format_size
from .spread import SLOW_FACTOR, SLOW_HANDOFF, Spread, slow_jobs


def print_spread(spreads: list[Spread], names: tuple[str, ...], jobs: int, out: TextIO) -> None:
    """spreads in report order: grouped by (op, dtype), then by size."""
    for (op, dtype), group in groupby(spreads, key=lambda s: (s.op, s.dtype)):
        group = list(group)
        print(
            f"\n# {op}  {dtype}  world {group[0].world}: each job's median time (us), over {jobs} jobs per "
            f"library; slow = above {SLOW_FACTOR:g}x the median job; x memcpy: the job's time over its own "
            "memcpy of the input (the machine's pace), median and max over jobs; 'memcpy alike': a slow job "
            "whose memcpy was slow too",
            file=out,
        )
        print(
            f"#{'backend':>11} {'size':>9} {'min':>10} {'median':>10} {'max':>10} {'max/min':>8} "
            f"{'x memcpy':>13}  slow jobs",
            file=out,
        )
        for name in names:
            for s in (s for s in group if s.backend == name):
                print(f" {name:>11} {format_size(s.size):>9} {spread_cells(s)}", file=out)
        if any(s.job_slow_batches for s in group):
            print_fast_state(group, names, out)
    print_slow_jobs(spreads, names, out)


def print_fast_state(group: list[Spread], names: tuple[str, ...], out: TextIO) -> None:
    """The same jobs over their batches in the machine's fast cross-CPU state only."""
    print(
        f"# the same over the batches in the machine's fast cross-CPU state (hand-off within "
        f"{SLOW_HANDOFF:g}x the run's fastest); machine slow: share of batches in the slow state",
        file=out,
    )
    print(
        f"#{'backend':>11} {'size':>9} {'min':>10} {'median':>10} {'max':>10} {'max/min':>8} "
        f"{'machine slow':>13}  slow jobs in the fast state",
        file=out,
    )
    for name in names:
        for s in (s for s in group if s.backend == name):
            print(f" {name:>11} {format_size(s.size):>9} {fast_state_cells(s)}", file=out)


def fast_state_cells(s: Spread) -> str:
    share = s.slow_share
    shown = "-" if share is None else f"{100 * share:.0f}%"
    if not s.job_fast:
        return f"{'-':>10} {'-':>10} {'-':>10} {'-':>8} {shown:>13}  no batch in the fast state"
    times = s.fast_times
    lo, mid, hi = min(times), statistics.median(times), max(times)
    slow = s.slow_in_fast_state()
    listed = ", ".join(f"job {job} ({format_us(t * 1e6)})" for job, t in slow)
    text = f"{len(slow)} of {len(times)}" + (f": {listed}" if slow else "")
    return f"{range_cells(lo, mid, hi)} {shown:>13}  {text}"


def spread_cells(s: Spread) -> str:
    if s.median is None:
        return f"{'-':>10} {'-':>10} {'-':>10} {'-':>8} {'-':>13}  not timed in any of {s.jobs} jobs"
    slow = s.slow()
    beyond = {job for job, _ in s.slow_beyond_machine()}
    listed = ", ".join(
        f"job {job} ({format_us(t * 1e6)}{'' if job in beyond else ', memcpy alike'})" for job, t in slow
    )
    text = f"{len(slow)} of {len(s.job_times)}" + (f": {listed}" if slow else "")
    if len(s.job_times) < s.jobs:
        text += f" ({s.jobs - len(s.job_times)} jobs did not time it)"
    ratios = [r for _, r in s.ratios]
    memcpy = f"{statistics.median(ratios):.2f} ({max(ratios):.2f})" if ratios else "-"
    return f"{range_cells(s.min, s.median, s.max)} {memcpy:>13}  {text}"


def range_cells(lo: float, mid: float, hi: float) -> str:
    """min, median and max (seconds, shown in µs) and max/min, in the table's columns."""
    cells = [format_us(x * 1e6) for x in (lo, mid, hi)]
    return f"{cells[0]:>10} {cells[1]:>10} {cells[2]:>10} {hi / lo:7.2f}x"


def print_slow_jobs(spreads: list[Spread], names: tuple[str, ...], out: TextIO) -> None:
    """One line per backend: its slow jobs and at how many of its cases each was slow, so a
    job that stayed slow throughout stands out from one slow case."""
    cases: dict[str, int] = {}
    jobs: dict[str, int] = {}
    for s in spreads:
        cases[s.backend] = cases.get(s.backend, 0) + 1
        jobs[s.backend] = max(jobs.get(s.backend, 0), s.jobs)
    print("#", file=out)
    kinds = [
        (Spread.slow, "slow jobs"),
        (Spread.slow_beyond_machine, "slow beyond the machine (memcpy not slow alike)"),
    ]
    if any(s.job_slow_batches for s in spreads):
        kinds.append((Spread.slow_in_fast_state, "slow in the machine's fast cross-CPU state"))
    for which, what in kinds:
        slow = slow_jobs(spreads, which)
        for name in names:
            if name not in cases:
                continue
            counter = slow.get(name)
            if not counter:
                print(f"# {name}: {what}: 0 of {jobs[name]}", file=out)
                continue
            listed = ", ".join(f"job {job} at {n} of {cases[name]} cases" for job, n in sorted(counter.items()))
            print(f"# {name}: {what}: {len(counter)} of {jobs[name]} ({listed})", file=out)


def print_run_order(spreads: list[Spread], order: list[tuple[str, int]], out: TextIO) -> None:
    """The slow jobs by their place in the run (order: (library, job number) as the jobs
    ran): slow periods of the machine show as neighbouring jobs of every library."""
    slow = {(s.backend, job) for s in spreads for job, _ in s.slow()}
    listed = [f"{i}: {name} #{job}" for i, (name, job) in enumerate(order, 1) if (name, job) in slow]
    print(f"# slow jobs by their place in the run of {len(order)}: {', '.join(listed) or 'none'}", file=out)
