"""How long to run each case, and the timed batches.

Iterations run in batches framed by barriers: every rank starts a batch together, and a
batch's time on a rank ends when its last collective returns. The per-iteration time of
a batch is its time divided by its iterations; the reported figure is the median over
batches of the slowest rank's per-iteration time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

BATCH_TARGET_S = 0.010  # adaptive: a batch long enough that barrier skew (tens of us) is noise
MIN_BATCHES = 3  # adaptive: a median needs a few; the largest gloo sizes take ~1 s per iteration
MAX_BATCHES = 50
FIXED_MAX_BATCHES = 10  # --iters N: N iterations in min(N, 10) batches


@dataclass(frozen=True)
class Plan:
    iters_per_batch: int
    batches: int


def plan(per_iter_s: float, iters: int | None, max_time: float) -> Plan:
    """Batches for a case whose iteration takes about per_iter_s (all ranks must pass the same)."""
    if iters is not None:
        batches = min(iters, FIXED_MAX_BATCHES)
        return Plan(math.ceil(iters / batches), batches)
    per_iter_s = max(per_iter_s, 1e-7)
    per_batch = max(1, int(min(BATCH_TARGET_S, max_time / MIN_BATCHES) / per_iter_s))
    batches = int(max_time / (per_batch * per_iter_s))
    return Plan(per_batch, min(MAX_BATCHES, max(MIN_BATCHES, batches)))


def warm_up_iters(first_iter_s: float, warmup: int, iters: int | None, max_time: float) -> int:
    """Warm-up iterations after a first iteration that took first_iter_s (the same on every
    rank, since every rank must run the same number of collectives). Adaptive mode keeps
    warm-up within a quarter of max_time."""
    if iters is not None:
        return warmup
    return min(warmup, int(max_time / 4 / max(first_iter_s, 1e-7)))


def run_timed(run: Callable[[], object], iters: int) -> list[float]:
    """Runs iters iterations and returns each one's seconds (no barriers: for estimates)."""
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return times


def time_batch(run: Callable[[], object], iters: int, barrier: Callable[[], object]) -> float:
    """Seconds per iteration of one batch on this rank, started right after a barrier."""
    barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        run()
    return (time.perf_counter() - t0) / iters
