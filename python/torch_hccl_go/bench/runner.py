"""The sweep every rank runs: every backend in the same processes (backends.py), cases in
order, and within a case the backends' batches interleaved so that noise hits all of them;
with --history, then the single ops after each condition (history.py), interleaved too.
A few batches of a local memcpy of the input between them record the machine's own pace
in this job (Result.memcpy_times), so that a slow job can be told from a slow machine.

Every rank must issue the same collectives in the same order, so every decision that
depends on a measurement (n/a or not, warm-up length, batch plan) is agreed through the
control group (the default gloo group) before it is acted on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from . import history, timing
from .backends import make_backends
from .config import BenchConfig
from .data import Buffers, allocate, count_wrong, fill_input, memcpy_op
from .ops import Case, dtype_by_name, dtype_name, make_case
from .progress import Progress
from .results import ERROR, NOT_AVAILABLE, SKIPPED, Result
from .sizes import format_size


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
    small_op: Callable[[], object]  # --history: an 8-byte all_reduce on the same backend
    plan: timing.Plan
    times: list[float]


HISTORY_COMPUTE_SIDE = 128  # --history compute bursts: matmuls of this square size


class Sweep:
    def __init__(self, cfg: BenchConfig, rank: int, world: int):
        self.cfg = cfg
        self.rank = rank
        self.world = world
        self.backends = make_backends(cfg.backends, cfg.timeout, world)
        self.broken: dict[str, str] = {}  # backend -> the case it failed on
        if cfg.history:
            hosts: list[str | None] = [None] * world
            dist.all_gather_object(hosts, history.host_identity())
            self.shared_clock = len(set(hosts)) == 1
            self.small = torch.zeros(2, dtype=torch.float32)  # zeros stay zeros, sum after sum
            self.square = torch.ones(HISTORY_COMPUTE_SIDE, HISTORY_COMPUTE_SIDE)
            self.product = torch.empty_like(self.square)
            self.floor = torch.zeros(2)  # --history's floor op (history.py)

    def backend_info(self) -> dict[str, dict]:
        """What each backend reports about itself (hccl_go: transports, options)."""
        return {name: info for name, backend in self.backends.items() if (info := backend.info())}

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
        # Interleave the backends batch by batch, each going first in turn; now and then the
        # machine's own pace (memcpy) in between, with the first backend's batch plan.
        batches = max((p.plan.batches for p in ready), default=0)
        memcpy_rounds, memcpy_times = timing.memcpy_rounds(batches), []
        memcpy = memcpy_op(buffers) if memcpy_rounds else None  # its scratch is as large as the input
        for batch in range(batches):
            for k in range(len(ready)):
                p = ready[(batch + index + k) % len(ready)]
                if batch < p.plan.batches:
                    p.times.append(timing.time_batch(p.run, p.plan.iters_per_batch, p.barrier, p.plan.rewarm))
            if batch in memcpy_rounds:
                plan = ready[0].plan
                memcpy_times.append(timing.time_batch(memcpy, plan.iters_per_batch, dist.barrier, plan.rewarm))
        memcpy_times = self._max_over_ranks(memcpy_times) if ready else []
        for p in ready:
            p.result.iters_per_batch = p.plan.iters_per_batch
            p.result.rewarm_iters = p.plan.rewarm
            p.result.batch_times = self._max_over_ranks(p.times)
            p.result.memcpy_times = memcpy_times
        if self.cfg.history and ready:
            self._run_history(ready, index)
        return [p.result if isinstance(p, _Prepared) else p for p in prepared]

    def _run_history(self, ready: list[_Prepared], index: int) -> None:
        """Single ops, and the floor, after each condition, the backends' repetitions
        interleaved; the call and return times of every repetition are gathered once at
        the end."""
        stamps: list[list[history.Stamps]] = [[] for _ in ready]  # per backend, in condition order
        reps = {}
        actions = [self._history_actions(p) for p in ready]
        for cond in history.CONDITIONS:
            reps[cond.name] = [history.repetitions(cond, p.result.time_s, self.cfg.max_time) for p in ready]
            for rep in range(max(reps[cond.name])):
                for k in range(len(ready)):
                    b = (rep + index + k) % len(ready)
                    if rep < reps[cond.name][b]:
                        stamps[b].append(history.time_repetition(cond, actions[b]))
        width = history.STAMPS
        flat = [t for per_backend in stamps for rep in per_backend for t in rep]
        every = self._gather(flat)  # [rank][width * repetition]
        offset = 0
        for b, p in enumerate(ready):
            for cond in history.CONDITIONS:
                n = reps[cond.name][b]
                mine = [
                    [tuple(row[i : i + width]) for i in range(offset, offset + width * n, width)] for row in every
                ]
                p.result.history[cond.name], p.result.history[history.floor_key(cond.name)] = history.split_times(
                    mine, self.shared_clock
                )
                offset += width * n

    def _history_actions(self, p: _Prepared) -> history.Actions:
        return history.Actions(
            op=p.run,
            small_op=p.small_op,
            compute_step=lambda: torch.mm(self.square, self.square, out=self.product),
            sync=dist.barrier,  # the control group's: another communicator
            same_op_iters=max(1, p.plan.rewarm),
            floor_op=lambda: self.floor.add_(1),
        )

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
        impl = self.backends[backend]
        if reason := impl.unsupported(case):
            result.status, result.reason = NOT_AVAILABLE, reason
            return result

        def run() -> object:
            return impl.run(case, buffers)

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

        plan = timing.settle(run, first, cfg.warmup, cfg.iters, cfg.max_time, cfg.rewarm_ms / 1e3, self._max_over_ranks)

        def small_op() -> object:
            return impl.small_all_reduce(self.small)

        return _Prepared(result, run, impl.barrier, small_op, plan, [])

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
