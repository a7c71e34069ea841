"""--history: one op timed right after what a training step does between its collectives.

The warm median (batches of back-to-back ops after a rewarm, timing.py) hides a library
that is slow to start again: a slow state that the rewarm clears never reaches a timed
batch. Here every repetition first brings the rank into a condition, then times a single
op:

- b2b:          right after the same op, back to back (the rewarm's iterations): the
                per-op twin of the warm median, so a ratio near 1 says the protocol
                itself adds nothing;
- 8B x50:       after 50 all_reduces of 8 bytes on the same library (a loss, a flag);
- idle 1/10/100ms: after time.sleep (the data loader, the optimizer, a checkpoint);
- compute 3ms:  after about 3 ms of matmuls on the rank's own thread (a backward layer).

Each repetition starts with a barrier on the control group (another communicator), then
the condition, then the timed op, then one more op, untimed, as in a loop: otherwise the
timed op would end with its peers leaving the library for the next barrier (on the 2-core
VM hccl_go's 8-byte b2b figure was 14.8x its warm median without that op, 0.97x with it).

Each repetition of a condition also times the floor: a trivial local op (an in-place add
on a 2-element array: torch's t.add_ for torch backends, numpy's for the MPI peer) after
the same condition, timed on each rank alone (the slowest rank counts). It is what the
machine charges any code after that condition: on a VM whose caches are cold after a
few ms idle, a 2-element torch add takes 10-40x its warm time after 1-100 ms of sleep.
A library's op that costs about the floor after a condition adds no slow state of its
own; the report gives both (report_history.py).

The op's time counts from the moment the last rank called it to the moment the last rank
returned: max over ranks of the return time minus max over ranks of the call time.
time.perf_counter is CLOCK_MONOTONIC on Linux, one clock for every process of a host, so
this is exact when the ranks share a host; across hosts the figure is the slowest rank's
own call-to-return time, which also counts its wait for late peers. The reported figure
is the median over repetitions, as batches are: a budget of --max-time per condition,
between timing.MIN_BATCHES and timing.MAX_BATCHES repetitions.

Standard library only: the MPI peer's program (peers/mpi_program.py) runs these same
conditions, without torch.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from .timing import MAX_BATCHES, MIN_BATCHES

SAME_OP, SMALL_OPS, IDLE, COMPUTE = "same_op", "small_ops", "idle", "compute"

FLOOR_PREFIX = "floor "  # history key of the floor after a condition: FLOOR_PREFIX + its name


def floor_key(condition: str) -> str:
    """The history key of the floor measured after condition."""
    return FLOOR_PREFIX + condition


@dataclass(frozen=True)
class Condition:
    name: str  # column title in the report and key in --json
    kind: str  # SAME_OP, SMALL_OPS, IDLE or COMPUTE
    seconds: float = 0.0  # IDLE: the gap; COMPUTE: the burst
    count: int = 0  # SMALL_OPS: how many


CONDITIONS: tuple[Condition, ...] = (
    Condition("b2b", SAME_OP),
    Condition("8B x50", SMALL_OPS, count=50),
    Condition("idle 1ms", IDLE, seconds=0.001),
    Condition("idle 10ms", IDLE, seconds=0.010),
    Condition("idle 100ms", IDLE, seconds=0.100),
    Condition("compute 3ms", COMPUTE, seconds=0.003),
)


@dataclass(frozen=True)
class Actions:
    """What a rank can do for one library, as callables (torch or MPI alike)."""

    op: Callable[[], object]  # the op being timed
    small_op: Callable[[], object]  # an 8-byte sum all_reduce on the same library
    compute_step: Callable[[], object]  # a short matmul on this thread
    sync: Callable[[], object]  # a barrier on the control communicator
    same_op_iters: int  # SAME_OP: iterations before the timed one (at least 1)
    floor_op: Callable[[], object]  # a trivial local op: the floor (module doc)


def repetitions(cond: Condition, per_op_s: float, budget_s: float) -> int:
    """Repetitions of cond within budget_s for an op of about per_op_s (the warm median, the
    same on every rank); between MIN_BATCHES and MAX_BATCHES. Gaps and bursts count; the
    lead-in ops of b2b (a rewarm, ~5 ms) and 8B x50 are short enough to leave out."""
    per_rep = max(cond.seconds + 2 * per_op_s, 1e-6)
    return min(MAX_BATCHES, max(MIN_BATCHES, int(budget_s / per_rep)))


def lead_in(cond: Condition, actions: Actions) -> None:
    """Brings this rank into the condition."""
    if cond.kind == SAME_OP:
        for _ in range(max(1, actions.same_op_iters)):
            actions.op()
    elif cond.kind == SMALL_OPS:
        for _ in range(cond.count):
            actions.small_op()
    elif cond.kind == IDLE:
        time.sleep(cond.seconds)
    elif cond.kind == COMPUTE:
        busy(cond.seconds, actions.compute_step)
    else:
        raise ValueError(f"unknown history condition kind {cond.kind!r}")


def time_one(cond: Condition, actions: Actions) -> tuple[float, float]:
    """One repetition on this rank: (call, return) times of the op, on time.perf_counter."""
    actions.sync()
    lead_in(cond, actions)
    called = time.perf_counter()
    actions.op()
    returned = time.perf_counter()
    actions.op()
    return called, returned


def time_floor(cond: Condition, actions: Actions) -> tuple[float, float]:
    """One repetition of the floor on this rank: (call, return) times of actions.floor_op
    right after the condition."""
    actions.sync()
    lead_in(cond, actions)
    called = time.perf_counter()
    actions.floor_op()
    return called, time.perf_counter()


Stamps = tuple[float, float, float, float]  # one repetition: op call, op return, floor call, floor return
STAMPS = 4  # len(Stamps)


def time_repetition(cond: Condition, actions: Actions) -> Stamps:
    """One repetition of cond on this rank: the op (time_one), then the floor (time_floor)."""
    return time_one(cond, actions) + time_floor(cond, actions)


def split_times(every: list[list[Stamps]], shared_clock: bool) -> tuple[list[float], list[float]]:
    """Seconds of the op and of the floor in each repetition, from every rank's
    [rank][repetition] stamps: the op by op_times' rule, the floor on each rank alone."""
    op = op_times([[s[0] for s in rank] for rank in every], [[s[1] for s in rank] for rank in every], shared_clock)
    floor = op_times([[s[2] for s in rank] for rank in every], [[s[3] for s in rank] for rank in every], False)
    return op, floor


def busy(seconds: float, step: Callable[[], object]) -> None:
    """Runs step until seconds have passed (at least once)."""
    end = time.perf_counter() + seconds
    step()
    while time.perf_counter() < end:
        step()


def op_times(called: list[list[float]], returned: list[list[float]], shared_clock: bool) -> list[float]:
    """Seconds of each repetition's op from every rank's [rank][repetition] call and return
    times (see the module doc)."""
    reps = range(len(called[0]))
    if shared_clock:
        return [max(r[i] for r in returned) - max(c[i] for c in called) for i in reps]
    return [max(r[i] - c[i] for c, r in zip(called, returned, strict=True)) for i in reps]


def host_identity() -> str:
    """Hostname and boot id: ranks with the same identity read the same monotonic clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"
