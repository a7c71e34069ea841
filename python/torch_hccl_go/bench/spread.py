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
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .results import OK, Result

SLOW_FACTOR = 1.5

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


def spreads(job_results: Iterable[JobResult]) -> list[Spread]:
    """One Spread per backend and case."""
    out = []
    for (backend, op, dtype, size), rows in _grouped(job_results).items():
        timed = tuple((job, r.time_s) for job, r in rows if r.ok)
        memcpy = tuple((job, r.memcpy_s) for job, r in rows if r.ok and r.memcpy_s)
        out.append(Spread(backend, op, dtype, size, rows[0][1].world, len(rows), timed, memcpy))
    return out


def slow_jobs(all_spreads: Iterable[Spread], beyond_machine: bool = False) -> dict[str, Counter[int]]:
    """Per backend: job number -> at how many of its cases that job was slow (beyond the
    machine's pace only, with beyond_machine)."""
    out: dict[str, Counter[int]] = {}
    for s in all_spreads:
        counter = out.setdefault(s.backend, Counter())
        counter.update(job for job, _ in (s.slow_beyond_machine() if beyond_machine else s.slow()))
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
                history={name: [r.history_median(name) for r in timed if name in r.history] for name in conditions},
            )
        )
    return out
