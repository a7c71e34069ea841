"""The sweep every rank runs: one process group per backend in the same processes, cases in
order, and within a case the backends' batches interleaved so that noise hits all of them.

Every rank must issue the same collectives in the same order, so every decision that
depends on a measurement (n/a or not, warm-up length, batch plan) is agreed through the
control group (the default gloo group) before it is acted on.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from . import timing
from .config import BenchConfig
from .data import Buffers, allocate, count_wrong, fill_input
from .ops import Case, dtype_by_name, dtype_name, make_case
from .progress import Progress
from .results import ERROR, NOT_AVAILABLE, SKIPPED, Result
from .sizes import format_size


def import_backend(backend: str) -> None:
    """Imports the package that registers backend with torch.distributed, where one is needed."""
    if backend == "hccl_go":
        import torch_hccl_go  # noqa: F401


def make_groups(cfg: BenchConfig) -> dict[str, dist.ProcessGroup]:
    """A process group over all ranks per backend (the default group stays the control group)."""
    groups = {}
    for backend in cfg.backends:
        import_backend(backend)
        groups[backend] = dist.new_group(backend=backend, timeout=timedelta(seconds=cfg.timeout))
    return groups


def cases(cfg: BenchConfig, world: int) -> Iterator[Case]:
    """Every case of the sweep, sizes rounded to whole elements/shares, duplicates dropped."""
    seen = set()
    for op in cfg.ops:
        for name in cfg.dtypes:
            for size in cfg.sizes:
                case = make_case(op, dtype_by_name(name), cfg.redop, cfg.root, world, size)
                if case not in seen:
                    seen.add(case)
                    yield case


@dataclass
class _Prepared:
    """A backend ready to be timed on the current case."""

    result: Result
    run: Callable[[], object]
    barrier: Callable[[], object]
    plan: timing.Plan
    times: list[float]


class Sweep:
    def __init__(self, cfg: BenchConfig, rank: int, world: int):
        self.cfg = cfg
        self.rank = rank
        self.world = world
        self.groups = make_groups(cfg)
        self.broken: dict[str, str] = {}  # backend -> the case it failed on

    def backend_info(self) -> dict[str, dict]:
        """What a backend reports about its communicator (hccl_go: transports, options)."""
        info = {}
        if "hccl_go" in self.groups:
            import torch_hccl_go

            info["hccl_go"] = torch_hccl_go.comm_info(self.groups["hccl_go"])
        return info

    def run(self, progress: Progress) -> list[Result]:
        results = []
        for index, case in enumerate(cases(self.cfg, self.world)):
            progress.describe(f"{case.op} {format_size(case.size)}")
            results += self.run_case(case, index)
            progress.advance()
        return results

    def run_case(self, case: Case, index: int) -> list[Result]:
        # Buffers live for this case only (freed on return, before the next, larger one).
        buffers = allocate(case)
        prepared = [self._prepare(case, backend, buffers) for backend in self.cfg.backends]
        ready = [p for p in prepared if isinstance(p, _Prepared)]
        # Interleave the backends batch by batch, each going first in turn.
        for batch in range(max((p.plan.batches for p in ready), default=0)):
            for k in range(len(ready)):
                p = ready[(batch + index + k) % len(ready)]
                if batch < p.plan.batches:
                    p.times.append(timing.time_batch(p.run, p.plan.iters_per_batch, p.barrier, p.plan.rewarm))
        for p in ready:
            p.result.iters_per_batch = p.plan.iters_per_batch
            p.result.rewarm_iters = p.plan.rewarm
            p.result.batch_times = self._max_over_ranks(p.times)
        return [p.result if isinstance(p, _Prepared) else p for p in prepared]

    def _prepare(self, case: Case, backend: str, buffers: Buffers) -> _Prepared | Result:
        """Checks one iteration against the reference and warms up; a Result if it is not timed."""
        cfg = self.cfg
        result = Result(
            backend=backend,
            op=case.op,
            dtype=dtype_name(case.dtype),
            redop=case.redop,
            root=case.root,
            world=case.world,
            size=case.size,
            count=case.count,
            bus_factor=case.spec.bus_factor(case.world),
        )
        if backend in self.broken:
            result.status, result.reason = SKIPPED, f"{backend} failed earlier ({self.broken[backend]})"
            return result
        group = self.groups[backend]

        def run() -> object:
            return case.spec.run(case, group, buffers.input, buffers.output)

        fill_input(case, self.rank, buffers)
        failed, reason, wrong, first = False, "", 0, 0.0
        try:
            t0 = time.perf_counter()
            run()
            first = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001  (agreed on and reported below)
            failed, reason = True, _first_line(e)
        if cfg.check and not failed:
            wrong = count_wrong(case, self.rank, buffers)
        # Agree on the outcome before any rank issues another collective.
        rows = self._gather([float(failed), wrong, first])
        failed_ranks = sum(int(row[0]) for row in rows)
        if failed_ranks:
            result.status, result.reason = _failure(reason, failed_ranks, self.world)
            if result.status == ERROR:
                self.broken[backend] = f"{case.op} {format_size(case.size)}"
            return result
        result.wrong = int(sum(row[1] for row in rows)) if cfg.check else None
        first = max(float(row[2]) for row in rows)

        warm = timing.warm_up_iters(first, cfg.warmup, cfg.iters, cfg.max_time)
        times = timing.run_timed(run, warm)
        estimate = self._max_over_ranks([statistics.median(times) if times else first])[0]
        if cfg.iters is None:
            estimate = self._steady_estimate(run, estimate)
        plan = timing.plan(estimate, cfg.iters, cfg.max_time, cfg.rewarm_ms / 1e3)
        return _Prepared(result, run, lambda: dist.barrier(group=group), plan, [])

    def _steady_estimate(self, run: Callable[[], object], estimate: float) -> float:
        """Per-iteration seconds in steady state: the lowest median of up to three timed runs
        of about timing.ESTIMATE_S (within a quarter of --max-time). A handful of warm-up
        iterations, or a run in the milliseconds after the check (Go's sysmon back at its
        fastest polling, see timing.py), can be 3-10 times slower than the steady state and
        would make every batch, and its rewarm, far too short."""
        budget = self.cfg.max_time / 4
        best = estimate
        for _ in range(3):
            n = timing.estimate_run_iters(best, budget)
            if n < 4:
                break  # long iterations: the estimate so far will do
            times = timing.run_timed(run, n)
            took, median = self._max_over_ranks([sum(times), statistics.median(times)])
            budget -= took
            best = min(best, median) if took >= timing.ESTIMATE_S / 2 else median
        return best

    def _gather(self, values: list[float]) -> list[list[float]]:
        """Every rank's values, through the control group."""
        mine = torch.tensor(values, dtype=torch.float64)
        rows = [torch.empty_like(mine) for _ in range(self.world)]
        dist.all_gather(rows, mine)
        return [row.tolist() for row in rows]

    def _max_over_ranks(self, values: list[float]) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()


def _failure(reason: str, failed_ranks: int, world: int) -> tuple[str, str]:
    """n/a when every rank refused the call (a local check such as an unsupported dtype or
    op: the group is still in step); an error when only some failed or one timed out
    (the group may be out of step, so the backend sits out the rest of the sweep)."""
    if failed_ranks == world and not any(w in reason.lower() for w in ("timeout", "timed out")):
        return NOT_AVAILABLE, reason
    return ERROR, reason or f"failed on {failed_ranks} of {world} ranks"


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:200]
