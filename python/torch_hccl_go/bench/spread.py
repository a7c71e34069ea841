"""--jobs: how one backend's figures spread over its jobs, and which jobs were slow.

Each job gives, per case, its median time (results.py). Over the N jobs of a backend the
report shows min, median and max of those per-job medians, and flags the jobs whose median
is above SLOW_FACTOR times the median job's. A library that starts some jobs in a slow
state and stays there shows up as the same jobs slow at most sizes; noise makes a job
slow at one size now and then.

A shared machine is also slow for a while now and then, for every process on it (other
tenants, the host's memory bandwidth). Each job times the machine's pace beside the op, a
local memcpy of the same input (Result.memcpy_times), so a slow job is told apart: slow
beyond the machine when its op/memcpy ratio is also above SLOW_FACTOR times the median
job's ratio (the library's doing), slow with the machine when its memcpy was slow alike.

The memcpy misses what slows shared-memory collectives most on a VM: the cross-CPU state
(handoff.py), which flips for seconds at a time, within jobs as well as between them. Each
batch is framed by two hand-off readings; it ran in the machine's slow state when one of
them is above SLOW_HANDOFF times the lowest reading of the whole run. Beside the spread of
all batches, the report gives the spread over the batches in the fast state, the share of
batches in the slow one, and the jobs slow even then: a library's own slow state shows
there; the machine's does not.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from .results import OK, Result

SLOW_FACTOR = 1.5
SLOW_HANDOFF = 2.0  # a hand-off reading above this times the run's lowest: the slow state

JobResult = tuple[int, Result]  # (job number of its backend: 1..N, the job's result)


@dataclass(frozen=True)
class Spread:
    backend: str
    op: str
    dtype: str
    size: int
    world: int
    jobs: int  # jobs of this backend that reported the case, timed or not
    job_times: tuple[tuple[int, float], ...]  # (job number, median seconds) of the jobs that timed it
    job_memcpy: tuple[tuple[int, float], ...] = ()  # (job number, its memcpy's median seconds)
    # (job number, median seconds over its batches in the machine's fast state), for the jobs
    # that had such batches, and (job number, batches in the slow state, batches).
    job_fast: tuple[tuple[int, float], ...] = ()
    job_slow_batches: tuple[tuple[int, int, int], ...] = ()

    @property
    def times(self) -> list[float]:
        return [t for _, t in self.job_times]

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.job_times else None

    @property
    def min(self) -> float | None:
        return min(self.times) if self.job_times else None

    @property
    def max(self) -> float | None:
        return max(self.times) if self.job_times else None

    @property
    def fast_times(self) -> list[float]:
        return [t for _, t in self.job_fast]

    @property
    def slow_share(self) -> float | None:
        """Share of all batches of all jobs timed in the machine's slow state (None: no
        hand-off readings)."""
        total = sum(n for _, _, n in self.job_slow_batches)
        return sum(k for _, k, _ in self.job_slow_batches) / total if total else None

    def slow_in_fast_state(self) -> list[tuple[int, float]]:
        """(job number, seconds) of the jobs whose median over the machine's fast state is
        above SLOW_FACTOR x the median of those: slow by the library's doing."""
        if not self.job_fast:
            return []
        median = statistics.median(self.fast_times)
        return [(job, t) for job, t in self.job_fast if t > SLOW_FACTOR * median]

    def slow(self) -> list[tuple[int, float]]:
        """(job number, seconds) of the jobs above SLOW_FACTOR x the median job."""
        median = self.median
        if median is None:
            return []
        return [(job, t) for job, t in self.job_times if t > SLOW_FACTOR * median]

    @property
    def ratios(self) -> list[tuple[int, float]]:
        """(job number, op time / its memcpy time) of the jobs that timed both."""
        memcpy = dict(self.job_memcpy)
        return [(job, t / memcpy[job]) for job, t in self.job_times if memcpy.get(job)]

    def slow_beyond_machine(self) -> list[tuple[int, float]]:
        """The slow jobs (slow()) whose op/memcpy ratio is above SLOW_FACTOR x the median
        job's ratio too, or that have no memcpy to tell: slow by the library's doing."""
        ratios = dict(self.ratios)
        if not ratios:
            return self.slow()
        median = statistics.median(ratios.values())
        return [(job, t) for job, t in self.slow() if job not in ratios or ratios[job] > SLOW_FACTOR * median]


def _key(r: Result) -> tuple[str, str, str, int]:
    return (r.backend, r.op, r.dtype, r.size)


def _grouped(job_results: Iterable[JobResult]) -> dict[tuple[str, str, str, int], list[JobResult]]:
    """Job results by (backend, op, dtype, size), in the order first seen."""
    groups: dict[tuple[str, str, str, int], list[JobResult]] = {}
    for job, r in job_results:
        groups.setdefault(_key(r), []).append((job, r))
    return groups


def slow_handoff_ns(job_results: Iterable[JobResult]) -> float | None:
    """The hand-off reading above which the machine was in its slow state, for this run:
    SLOW_HANDOFF times its lowest reading (None: no readings)."""
    readings = [x for _, r in job_results for x in r.handoff_ns if x is not None]
    return SLOW_HANDOFF * min(readings) if readings else None


def spreads(job_results: Iterable[JobResult]) -> list[Spread]:
    """One Spread per backend and case."""
    job_results = list(job_results)
    threshold = slow_handoff_ns(job_results)
    out = []
    for (backend, op, dtype, size), rows in _grouped(job_results).items():
        timed = tuple((job, r.time_s) for job, r in rows if r.ok)
        memcpy = tuple((job, r.memcpy_s) for job, r in rows if r.ok and r.memcpy_s)
        fast, slow_batches = [], []
        if threshold is not None:
            for job, r in rows:
                if not r.ok:
                    continue
                in_fast, n_slow = r.batches_in_state(threshold)
                slow_batches.append((job, n_slow, len(r.batch_times)))
                if in_fast:
                    fast.append((job, statistics.median(in_fast)))
        out.append(
            Spread(
                backend,
                op,
                dtype,
                size,
                rows[0][1].world,
                len(rows),
                timed,
                memcpy,
                tuple(fast),
                tuple(slow_batches),
            )
        )
    return out


def slow_jobs(
    all_spreads: Iterable[Spread], which: Callable[[Spread], list[tuple[int, float]]] = Spread.slow
) -> dict[str, Counter[int]]:
    """Per backend: job number -> at how many of its cases that job was slow, by `which`
    (Spread.slow, Spread.slow_beyond_machine or Spread.slow_in_fast_state)."""
    out: dict[str, Counter[int]] = {}
    for s in all_spreads:
        out.setdefault(s.backend, Counter()).update(job for job, _ in which(s))
    return out


def fast_state_job_results(job_results: Iterable[JobResult]) -> list[JobResult]:
    """job_results with each timed result cut to its batches in the machine's fast state
    (a result with none left out); empty when the run has no hand-off readings."""
    job_results = list(job_results)
    threshold = slow_handoff_ns(job_results)
    if threshold is None:
        return []
    out = []
    for job, r in job_results:
        if not r.ok:
            out.append((job, r))
            continue
        fast, _ = r.batches_in_state(threshold)
        if fast:
            out.append((job, replace(r, batch_times=fast, handoff_ns=[])))
    return out


def summary_results(job_results: Iterable[JobResult]) -> list[Result]:
    """One Result per backend and case that stands for all of its jobs, for the tables and
    plots that take Results: its batch_times are the per-job medians (so its time is the
    median over jobs, its min and max the fastest and slowest job), its memcpy_times and
    history the per-job medians, its wrong count the sum over jobs. It is ok when any job
    timed the case; otherwise it carries the first job's status and reason."""
    out = []
    for rows in _grouped(job_results).values():
        results = [r for _, r in rows]
        timed = [r for r in results if r.ok]
        base = timed[0] if timed else results[0]
        checked = [r.wrong for r in results if r.wrong is not None]
        conditions = dict.fromkeys(name for r in timed for name in r.history)
        out.append(
            replace(
                base,
                status=OK if timed else base.status,
                reason="" if timed else base.reason,
                wrong=sum(checked) if checked else None,
                iters_per_batch=0,
                rewarm_iters=0,
                batch_times=[r.time_s for r in timed],
                memcpy_times=[r.memcpy_s for r in timed if r.memcpy_s],
                handoff_ns=[],
                history={name: [r.history_median(name) for r in timed if name in r.history] for name in conditions},
            )
        )
    return out
