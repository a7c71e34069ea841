"""One backend's figures for one case, as rank 0 collects them."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

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
        return d
