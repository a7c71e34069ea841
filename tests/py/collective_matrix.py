"""The collective conformance matrix: every collective x dtype x size (x reduce op), on one rank.

`matrix_job` runs inside a spawned rank (see harness.py). For each case it runs the
collective on the default group (the backend under test) and checks the result
against a local reference computed from every rank's input (reference.py), then
runs the same collective on a gloo group and compares the two. Results that must
be the same on every rank are hashed, and the hashes compared across ranks at the
end (over the gloo group, so the check does not trust the backend under test).

Invalid (dtype, op) pairs must raise an exception with a useful message on every
rank, and the job continues with the next case. Failures are collected, not
raised, so one run reports all of them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from reference import (
    ALL_DTYPES,
    PREMUL_FACTOR,
    REDUCE_OPS,
    backend_supports,
    digest,
    dtype_name,
    make_input,
    mismatch,
    op_is_tested,
    op_is_valid,
    poison,
    reduce_reference,
)

SIZES = (0, 1, 7, 1000, "big", "huge")
BYTES = {"big": 1 << 20, "huge": 9 << 20}  # just over this many bytes in the whole buffer
# "huge" (past hccl_go's 4 MiB shared-memory halves, so several rounds) runs a subset only,
# and not at world size 4 (see test_collectives.py), to keep the suite fast on two cores
HUGE_DTYPES = (torch.float32, torch.bfloat16, torch.uint8)
HUGE_OPS = ("SUM", "AVG")

REDUCTIONS = ("all_reduce", "reduce", "reduce_scatter", "reduce_scatter_tensor")
MOVEMENTS = (
    "broadcast",
    "all_gather",
    "all_gather_into_tensor",
    "all_to_all",
    "all_to_all_single",
    "all_to_all_single_uneven",
    "gather",
    "scatter",
    "send_recv",
    "isend_irecv",
    "batch_isend_irecv",
)
COLLECTIVES = REDUCTIONS + MOVEMENTS


def reduce_op(name: str):
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return getattr(dist.ReduceOp, name)


def chunk_len(size, dtype: torch.dtype, world: int) -> int:
    """Elements per rank's chunk; "big" and "huge" make the whole world*chunk buffer just over
    BYTES[size]."""
    if size not in BYTES:
        return size
    item = torch.empty(0, dtype=dtype).element_size()
    return BYTES[size] // item // world + 3  # odd, so chunks do not split evenly into lanes


def uneven_split(i: int, j: int, n: int) -> int:
    """Elements rank i sends to rank j in the uneven all_to_all_single: varied, some zero."""
    return 0 if n == 0 else max(0, n + (i * 7 + j * 3) % 5 - 2)


@dataclass
class Case:
    coll: str
    dtype: torch.dtype
    n: int
    op: str = ""
    root: int = 0

    def __str__(self) -> str:
        s = f"{self.coll} {dtype_name(self.dtype)} n={self.n}"
        if self.op:
            s += f" op={self.op}"
        if self.coll in ("reduce", "broadcast", "gather", "scatter"):
            s += f" root={self.root}"
        return s


@dataclass
class Report:
    """What one rank found; keyed by (collective, dtype name) so pytest can report each pair."""

    failures: dict = field(default_factory=lambda: defaultdict(list))
    cases: dict = field(default_factory=lambda: defaultdict(int))
    gloo_compared: dict = field(default_factory=lambda: defaultdict(int))
    hashes: dict = field(default_factory=dict)
    seconds: float = 0.0
    info: dict = field(default_factory=dict)  # hccl_go's comm_info of the group under test

    def fail(self, case: Case, rank: int, what: str) -> None:
        self.failures[(case.coll, dtype_name(case.dtype))].append(f"{case} rank {rank}: {what}")


class Inputs:
    """Every rank's input for the current (dtype, length, kind), cached across collectives."""

    def __init__(self, world: int) -> None:
        self.world = world
        self._cache: dict = {}
        self._refs: dict = {}

    def all(self, dtype: torch.dtype, n: int, kind: str = "any") -> list[torch.Tensor]:
        key = (dtype, n, kind)
        if key not in self._cache:
            self._cache[key] = [make_input(r, dtype, n, kind) for r in range(self.world)]
        return self._cache[key]

    def reference(self, xs: list[torch.Tensor], op: str):
        """reduce_reference(xs, op), cached: collectives that share inputs share it too."""
        key = (id(xs), op)
        if key not in self._refs:
            self._refs[key] = reduce_reference(xs, op)
        return self._refs[key]

    def clear(self) -> None:
        self._cache.clear()
        self._refs.clear()


# --- the collectives, each run on a given group; they return what the rank ended with ---


def run_reduction(case: Case, x: torch.Tensor, group, rank: int, world: int) -> torch.Tensor:
    op = reduce_op(case.op)
    if case.coll == "all_reduce":
        t = x.clone()
        dist.all_reduce(t, op=op, group=group)
        return t
    if case.coll == "reduce":
        t = x.clone()
        dist.reduce(t, dst=case.root, op=op, group=group)
        return t
    out = poison(case.n, x.dtype)
    if case.coll == "reduce_scatter":
        dist.reduce_scatter(out, list(x.split(case.n)) if case.n else [x.clone() for _ in range(world)],
                            op=op, group=group)
    else:
        dist.reduce_scatter_tensor(out, x, op=op, group=group)
    return out


def run_movement(case: Case, xs: list[torch.Tensor], group, rank: int, world: int):
    """xs: every rank's input (this rank uses xs[rank]). Returns (got, expected) tensors."""
    n, dt, root = case.n, case.dtype, case.root
    x = xs[rank]
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    c = case.coll
    if c == "broadcast":
        t = x.clone() if rank == root else poison(n, dt)
        dist.broadcast(t, src=root, group=group)
        return t, xs[root]
    if c == "all_gather":
        outs = [poison(n, dt) for _ in range(world)]
        dist.all_gather(outs, x, group=group)
        return torch.cat(outs), torch.cat(xs)
    if c == "all_gather_into_tensor":
        out = poison(n * world, dt)
        dist.all_gather_into_tensor(out, x, group=group)
        return out, torch.cat(xs)
    if c == "all_to_all":  # xs[r] holds world chunks of n: chunk j goes to rank j
        outs = [poison(n, dt) for _ in range(world)]
        dist.all_to_all(outs, [x[j * n:(j + 1) * n].clone() for j in range(world)], group=group)
        return torch.cat(outs), torch.cat([xs[j][rank * n:(rank + 1) * n] for j in range(world)])
    if c == "all_to_all_single":
        out = poison(n * world, dt)
        dist.all_to_all_single(out, x, group=group)
        return out, torch.cat([xs[j][rank * n:(rank + 1) * n] for j in range(world)])
    if c == "all_to_all_single_uneven":
        send = [uneven_split(rank, j, n) for j in range(world)]
        recv = [uneven_split(j, rank, n) for j in range(world)]
        out = poison(sum(recv), dt)
        dist.all_to_all_single(out, x[: sum(send)], output_split_sizes=recv, input_split_sizes=send, group=group)
        expected = []
        for j in range(world):
            start = sum(uneven_split(j, k, n) for k in range(rank))
            expected.append(xs[j][start:start + uneven_split(j, rank, n)])
        return out, torch.cat(expected)
    if c == "gather":
        outs = [poison(n, dt) for _ in range(world)] if rank == root else None
        dist.gather(x, outs, dst=root, group=group)
        if rank != root:
            return None, None
        return torch.cat(outs), torch.cat(xs)
    if c == "scatter":  # the root's input holds world chunks of n
        out = poison(n, dt)
        chunks = [x[j * n:(j + 1) * n].clone() for j in range(world)] if rank == root else None
        dist.scatter(out, chunks, src=root, group=group)
        return out, xs[root][rank * n:(rank + 1) * n]
    out = poison(n, dt)
    if c == "send_recv":  # a ring with blocking calls: even ranks send first
        if rank % 2 == 0:
            dist.send(x, dst=nxt, group=group)
            dist.recv(out, src=prv, group=group)
        else:
            dist.recv(out, src=prv, group=group)
            dist.send(x, dst=nxt, group=group)
    elif c == "isend_irecv":
        reqs = [dist.irecv(out, src=prv, group=group), dist.isend(x, dst=nxt, group=group)]
        for r in reqs:
            r.wait()
    elif c == "batch_isend_irecv":
        ops = [dist.P2POp(dist.isend, x, nxt, group=group), dist.P2POp(dist.irecv, out, prv, group=group)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
    else:
        raise ValueError(f"unknown collective {c}")
    return out, xs[prv]


def input_len(coll: str, n: int, world: int) -> int:
    """Elements in each rank's input for a case of chunk length n."""
    if coll in ("reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "scatter"):
        return n * world
    if coll == "all_to_all_single_uneven":
        return max(sum(uneven_split(i, j, n) for j in range(world)) for i in range(world))
    return n


# --- the driver ---


class Matrix:
    def __init__(
        self, ctx, colls: tuple[str, ...], sizes: tuple, dtypes: tuple, with_gloo: bool, tested=None
    ) -> None:
        self.ctx = ctx
        self.with_gloo = with_gloo
        self.tested = tested  # the group under test, spanning every rank (None: the default group)
        self.rank, self.world = ctx.rank, ctx.world_size
        self.colls, self.sizes, self.dtypes = colls, sizes, dtypes
        self.report = Report()
        self.inputs = Inputs(self.world)
        self.gloo = dist.new_group(backend="gloo", timeout=ctx_timeout())
        self.root_turn = 0

    def next_root(self) -> int:
        self.root_turn += 1
        return self.root_turn % self.world

    def run(self) -> Report:
        start = time.perf_counter()
        for size in self.sizes:
            huge = size == "huge"
            for dtype in self.dtypes:
                if huge and dtype not in HUGE_DTYPES:
                    continue
                n = chunk_len(size, dtype, self.world)
                for coll in self.colls:
                    if coll in REDUCTIONS:
                        for op in HUGE_OPS if huge else REDUCE_OPS:
                            if op_is_tested(dtype, op) and backend_supports(self.ctx.backend, dtype, op):
                                self.reduction_case(Case(coll, dtype, n, op, self.next_root()))
                    elif backend_supports(self.ctx.backend, dtype):
                        self.movement_case(Case(coll, dtype, n, root=self.next_root()))
            self.inputs.clear()
        self.compare_hashes()
        self.report.seconds = time.perf_counter() - start
        # defaultdicts with lambdas do not pickle: hand back plain dicts
        self.report.failures = dict(self.report.failures)
        self.report.cases = dict(self.report.cases)
        self.report.gloo_compared = dict(self.report.gloo_compared)
        return self.report

    def key(self, case: Case) -> tuple[str, str]:
        return case.coll, dtype_name(case.dtype)

    def guarded(self, case: Case, fn: Callable):
        """Runs fn; an unexpected exception becomes a failure of this case (and the job goes on)."""
        try:
            return True, fn()
        except Exception as e:  # noqa: BLE001
            self.report.fail(case, self.rank, f"raised {type(e).__name__}: {first_line(e)}")
            return False, None

    def reduction_case(self, case: Case) -> None:
        self.ctx.progress(str(case))
        self.report.cases[self.key(case)] += 1
        kind = "product" if case.op == "PRODUCT" else "any"
        xs = self.inputs.all(case.dtype, input_len(case.coll, case.n, self.world), kind)
        x = xs[self.rank]

        if not op_is_valid(case.dtype, case.op):
            self.expect_error(case, lambda: run_reduction(case, x, self.tested, self.rank, self.world))
            return
        # Every rank runs the same sequence of collectives whatever it finds, so that a
        # failure on one rank does not leave the others waiting in the next call.
        run = lambda group: run_reduction(case, x, group, self.rank, self.world)  # noqa: E731
        ok, got = self.guarded(case, lambda: run(self.tested))
        again = None
        if case.coll == "all_reduce" and case.dtype.is_floating_point and case.n >= 1000:
            _, again = self.guarded(case, lambda: run(self.tested))  # same inputs must give the same bits
        ref = self.run_gloo(case, lambda: run(self.gloo))
        if not ok or (case.coll == "reduce" and self.rank != case.root):
            return  # a non-root reduce buffer is scratch space: NCCL and gloo leave different things there

        expected, bound = self.inputs.reference(xs, case.op)
        if case.coll.startswith("reduce_scatter"):
            lo, hi = self.rank * case.n, (self.rank + 1) * case.n
            expected = expected[lo:hi]
            bound = None if bound is None else bound[lo:hi]
        if (msg := mismatch(got, expected, bound)) is not None:
            self.report.fail(case, self.rank, f"vs reference: {msg}")
        if case.coll == "all_reduce":
            self.report.hashes[str(case)] = digest(got)
        if again is not None and digest(again) != digest(got):
            self.report.fail(case, self.rank, "a second run on the same inputs gave different bits")
        if ref is not None:
            if bound is None:
                msg = mismatch(got, ref)
            else:
                msg = mismatch(got, ref.to(torch.float64), 2 * bound)
            if msg is not None:
                self.report.fail(case, self.rank, f"vs gloo: {msg}")

    def run_gloo(self, case: Case, fn: Callable):
        """The same collective on the gloo group, or None where gloo does not support it
        (int16, PREMUL_SUM, integer AVG), or when the job runs without gloo."""
        if not self.with_gloo:
            return None
        try:
            out = fn()
        except Exception:  # noqa: BLE001
            return None
        self.report.gloo_compared[self.key(case)] += 1
        return out

    def movement_case(self, case: Case) -> None:
        self.ctx.progress(str(case))
        self.report.cases[self.key(case)] += 1
        xs = self.inputs.all(case.dtype, input_len(case.coll, case.n, self.world))
        run = lambda group: run_movement(case, xs, group, self.rank, self.world)  # noqa: E731
        ok, result = self.guarded(case, lambda: run(self.tested))
        ref = self.run_gloo(case, lambda: run(self.gloo))
        if not ok or result[0] is None:
            return
        got, expected = result
        if (msg := mismatch(got, expected)) is not None:
            self.report.fail(case, self.rank, f"vs reference: {msg}")
        if case.coll in ("broadcast", "all_gather", "all_gather_into_tensor"):
            self.report.hashes[str(case)] = digest(got)
        if ref is not None and (msg := mismatch(got, ref[0])) is not None:
            self.report.fail(case, self.rank, f"vs gloo: {msg}")

    def expect_error(self, case: Case, fn: Callable) -> None:
        """An invalid (dtype, op) pair must raise, naming the op or the dtype."""
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            text = str(e).lower()
            words = (case.op.lower(), dtype_name(case.dtype), "dtype", "type", "op")
            if not any(w in text for w in words):
                self.report.fail(case, self.rank, f"error message names neither op nor dtype: {first_line(e)}")
            return
        self.report.fail(case, self.rank, "invalid (dtype, op) pair did not raise")

    def compare_hashes(self) -> None:
        """Results that every rank must hold bitwise alike: compare their hashes across ranks."""
        self.ctx.progress("comparing result hashes across ranks (gloo)")
        everyone: list = [None] * self.world
        dist.all_gather_object(everyone, self.report.hashes, group=self.gloo)
        for name in self.report.hashes:
            others = {r: hs.get(name) for r, hs in enumerate(everyone)}
            if len(set(others.values())) > 1:
                coll, dt = name.split()[:2]
                self.report.failures.setdefault((coll, dt), []).append(
                    f"{name}: results differ bitwise across ranks: {others}"
                )


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:300] if lines else repr(e)


def ctx_timeout():
    from harness import COLLECTIVE_TIMEOUT

    return COLLECTIVE_TIMEOUT


def matrix_job(ctx, colls=COLLECTIVES, sizes=SIZES, dtypes=ALL_DTYPES, with_gloo=True) -> Report:
    """Runs the matrix on this rank; with_gloo=False checks against the reference only."""
    return Matrix(ctx, tuple(colls), tuple(sizes), tuple(dtypes), with_gloo).run()


def config_matrix_job(ctx, configs: dict[str, dict], colls, sizes, dtypes) -> dict[str, Report]:
    """Runs the matrix (reference checks only) once per hccl_go configuration, each on a group
    created with those options: {config name: Report}. Each report is also recorded as soon
    as it is done, so a hang in one configuration keeps the others' results."""
    import torch_hccl_go

    reports = {}
    for name, fields in configs.items():
        ctx.progress(f"creating the {name} group")
        options = torch_hccl_go.Options(**fields)
        group = dist.new_group(backend="hccl_go", pg_options=options, timeout=ctx_timeout())
        reports[name] = Matrix(ctx, tuple(colls), tuple(sizes), tuple(dtypes), False, group).run()
        reports[name].info = torch_hccl_go.comm_info(group)
        ctx.record(name, reports[name])
        dist.destroy_process_group(group)
    return reports
