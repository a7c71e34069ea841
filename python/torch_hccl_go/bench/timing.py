"""How long to run each case, and the timed batches.

Iterations run in batches framed by barriers: every rank starts a batch together, and a
batch's time on a rank ends when its last collective returns. The per-iteration time of
a batch is its time divided by its iterations; the reported figure is the median over
batches of the slowest rank's per-iteration time.

The backends' batches alternate, so each batch first runs untimed iterations of its own
for about --rewarm-ms (5 ms by default, at least one iteration, at most a batch): the
batch is then timed in steady state, as nccl-tests times, and not charged for
the previous backend's batch. The reason, measured on the 2-core VM: after more than
~10 ms away from Go (a long gloo batch, or plain sleep), the Go runtime's monitor thread
(sysmon) goes back to polling every 20 us and backs off over the next milliseconds (its
delay doubles every 50 polls); each poll preempts a busy core, and 8-byte hccl_go
all_reduces ran 40-100 % slower until it had backed off. (A Go toolchain patched to
restart sysmon at 5 ms made the slowdown vanish. The library avoids the causes it can,
export/maxprocs.go and export/processor.go, but not this one: a thread away that long
loses its Go processor.) A large op also finds its buffers evicted by the other backend.

Standard library only: the MPI peer's program (peers/mpi_program.py) times Open MPI with
these same functions, without torch.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

BATCH_TARGET_S = 0.010  # adaptive: a batch long enough that barrier skew (tens of us) is noise
MIN_BATCHES = 3  # adaptive: a median needs a few; the largest gloo sizes take ~1 s per iteration
MAX_BATCHES = 50
FIXED_MAX_BATCHES = 10  # --iters N: N iterations in min(N, 10) batches


MaxOverRanks = Callable[[list[float]], list[float]]  # element-wise maximum over every rank


@dataclass(frozen=True)
class Plan:
    iters_per_batch: int
    batches: int
    rewarm: int = 0  # untimed iterations before each batch


def plan(per_iter_s: float, iters: int | None, max_time: float, rewarm_s: float = 0.0) -> Plan:
    """Batches for a case whose iteration takes about per_iter_s (all ranks must pass the same)."""
    per_iter_s = max(per_iter_s, 1e-7)
    if iters is not None:
        batches = min(iters, FIXED_MAX_BATCHES)
        p = Plan(math.ceil(iters / batches), batches)
    else:
        per_batch = max(1, int(min(BATCH_TARGET_S, max_time / MIN_BATCHES) / per_iter_s))
        batches = int(max_time / (per_batch * per_iter_s))
        p = Plan(per_batch, min(MAX_BATCHES, max(MIN_BATCHES, batches)))
    if rewarm_s <= 0:
        return p
    # At least one: a large op right after the other backend's batch finds its buffers
    # evicted from the caches (10-30 % slower at 16 MiB), and sizes with and without a
    # rewarm side by side would show a step that is not the library's.
    return Plan(p.iters_per_batch, p.batches, min(p.iters_per_batch, max(1, math.ceil(rewarm_s / per_iter_s))))


def warm_up_iters(first_iter_s: float, warmup: int, iters: int | None, max_time: float) -> int:
    """Warm-up iterations after a first iteration that took first_iter_s (the same on every
    rank, since every rank must run the same number of collectives). Adaptive mode keeps
    warm-up within a quarter of max_time."""
    if iters is not None:
        return warmup
    return min(warmup, int(max_time / 4 / max(first_iter_s, 1e-7)))


ESTIMATE_S = 0.010  # adaptive: batches are sized from a timed run about this long


def estimate_run_iters(per_iter_s: float, budget_s: float) -> int:
    """Iterations of a run that times about ESTIMATE_S within budget_s; under 4 (too
    few to matter, or too long) means the estimate so far will do."""
    per_iter_s = max(per_iter_s, 1e-7)
    return int(min(ESTIMATE_S, budget_s) / per_iter_s)


def run_timed(run: Callable[[], object], iters: int) -> list[float]:
    """Runs iters iterations and returns each one's seconds (no barriers: for estimates)."""
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


def time_batch(run: Callable[[], object], iters: int, barrier: Callable[[], object], rewarm: int = 0) -> float:
    """Seconds per iteration of one batch on this rank, started after a barrier and rewarm
    untimed iterations."""
    barrier()
    for _ in range(rewarm):
        run()
    t0 = time.perf_counter()
    for _ in range(iters):
        run()
    return (time.perf_counter() - t0) / iters


def settle(
    run: Callable[[], object],
    first_s: float,
    warmup: int,
    iters: int | None,
    max_time: float,
    rewarm_s: float,
    max_over_ranks: MaxOverRanks,
) -> Plan:
    """Warms up after a first iteration that took first_s on the slowest rank, and plans the
    batches from the slowest rank's per-iteration time. Every rank calls it with the same
    figures and gets the same plan (every rank must run the same number of collectives)."""
    times = run_timed(run, warm_up_iters(first_s, warmup, iters, max_time))
    estimate = max_over_ranks([statistics.median(times) if times else first_s])[0]
    if iters is None:
        estimate = steady_estimate(run, estimate, max_time, max_over_ranks)
    return plan(estimate, iters, max_time, rewarm_s)


def steady_estimate(run: Callable[[], object], estimate: float, max_time: float, max_over_ranks: MaxOverRanks) -> float:
    """Per-iteration seconds in steady state: the lowest median of up to three timed runs of
    about ESTIMATE_S (within a quarter of max_time). A handful of warm-up iterations, or a
    run in the milliseconds after the result check (Go's sysmon back at its fastest
    polling, see above), can be 3-10 times slower than the steady state and would make
    every batch, and its rewarm, far too short."""
    budget = max_time / 4
    best = estimate
    for _ in range(3):
        n = estimate_run_iters(best, budget)
        if n < 4:
            break  # long iterations: the estimate so far will do
        times = run_timed(run, n)
        took, median = max_over_ranks([sum(times), statistics.median(times)])
        budget -= took
        best = min(best, median) if took >= ESTIMATE_S / 2 else median
    return best


def memcpy_rounds(batches: int) -> set[int]:
    """The rounds of a case's batches after which its memcpy is timed (Result.memcpy_times):
    the first, middle and last, spread over the case so that a machine slowed for part of
    it shows in both."""
    if batches <= 0:
        return set()
    return {0, batches // 2, batches - 1}
