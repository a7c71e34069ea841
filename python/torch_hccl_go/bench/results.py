"""One backend's figures for one case, as rank 0 collects them, and their --json row.

Standard library only: the MPI peer's program (peers/mpi_program.py) writes its rows with
it, without torch.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, fields

OK = "ok"
NOT_AVAILABLE = "n/a"  # the backend does not support this op/dtype/redop
ERROR = "error"  # the backend failed; later cases of that backend are skipped
SKIPPED = "skipped"


@dataclass
class Result:
    backend: str
    op: str
    dtype: str
    redop: str
    root: int
    world: int
    size: int  # bytes (nccl-tests "size")
    count: int  # elements
    bus_factor: float
    status: str = OK
    reason: str = ""
    wrong: int | None = None  # elements differing from the reference, over all ranks; None: not checked
    iters_per_batch: int = 0
    rewarm_iters: int = 0  # untimed iterations before each batch (timing.py)
    # Per-iteration seconds of each batch on the slowest rank.
    batch_times: list[float] = field(default_factory=list)
    # --history: condition name -> seconds of the op in each repetition (history.py).
    history: dict[str, list[float]] = field(default_factory=dict)
    # The machine's own pace in this job: per-iteration seconds of a few batches of a local
    # copy of the input buffer, every rank at once, slowest rank (runner.py). A job slower
    # than others whose memcpy was slower alike was slowed by the machine, not the library.
    memcpy_times: list[float] = field(default_factory=list)
    # The machine's cross-CPU state (handoff.py): ns per round trip between ranks 0 and 1
    # before the first round of batches and after each; reading k and k+1 frame batch k.
    # Empty (or None readings) when not measured.
    handoff_ns: list[float | None] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == OK and bool(self.batch_times)

    @property
    def time_s(self) -> float | None:
        return statistics.median(self.batch_times) if self.ok else None

    @property
    def time_us(self) -> float | None:
        t = self.time_s
        return None if t is None else t * 1e6

    @property
    def algbw(self) -> float | None:
        """GB/s (1e9 bytes) of the op's size over its time, as nccl-tests."""
        t = self.time_s
        return None if t is None else self.size / t / 1e9

    @property
    def busbw(self) -> float | None:
        a = self.algbw
        return None if a is None else a * self.bus_factor

    @property
    def memcpy_s(self) -> float | None:
        """Median seconds of the job's memcpy (the machine's pace), None if not timed."""
        return statistics.median(self.memcpy_times) if self.memcpy_times else None

    def batches_in_state(self, slow_above_ns: float) -> tuple[list[float], int]:
        """The batch times whose framing hand-off readings are both at most slow_above_ns
        (the machine in its fast state), and how many batches were framed by a slower one.
        Batches without two readings count as fast."""
        fast, slow = [], 0
        for k, t in enumerate(self.batch_times):
            frame = [x for x in self.handoff_ns[k : k + 2] if x is not None]
            if any(x > slow_above_ns for x in frame):
                slow += 1
            else:
                fast.append(t)
        return fast, slow

    def history_median(self, condition: str) -> float | None:
        """Median seconds of the op after a --history condition, None if not measured."""
        times = self.history.get(condition)
        return statistics.median(times) if times else None

    def to_json(self) -> dict:
        d = asdict(self)
        d["time_us"] = self.time_us
        d["algbw_GBps"] = self.algbw
        d["busbw_GBps"] = self.busbw
        d["batch_times_us"] = [t * 1e6 for t in self.batch_times]
        del d["batch_times"]
        if self.ok:
            d["time_us_min"] = min(d["batch_times_us"])
            d["time_us_max"] = max(d["batch_times_us"])
        del d["history"]
        d["memcpy_times_us"] = [t * 1e6 for t in self.memcpy_times]
        del d["memcpy_times"]
        d["memcpy_us"] = None if self.memcpy_s is None else self.memcpy_s * 1e6
        if self.history:
            d["history_us"] = {name: [t * 1e6 for t in times] for name, times in self.history.items()}
        return d

    @classmethod
    def from_json(cls, row: dict) -> Result:
        """The Result a to_json row was written from (a job's --json read back)."""
        names = {f.name for f in fields(cls)} - {"batch_times", "history", "memcpy_times"}
        r = cls(**{k: v for k, v in row.items() if k in names})
        r.batch_times = [t / 1e6 for t in row.get("batch_times_us", [])]
        r.memcpy_times = [t / 1e6 for t in row.get("memcpy_times_us", [])]
        r.history = {name: [t / 1e6 for t in times] for name, times in row.get("history_us", {}).items()}
        return r
