"""The machine's cross-CPU pace: how long a value takes to go from rank 0's CPU to rank 1's
and back, measured between the batches of a case (runner.py, peers/mpi_program.py).

Ranks 0 and 1, when they share a host, hand a counter back and forth through one cache line
of a shared file in /dev/shm (csrc/handoff_probe.c, loaded with ctypes). Every shared-memory
collective waits on such hand-overs and on copies between the two CPUs' caches, so their
pace bounds its speed. On a VM that pace is not fixed: this 2-vCPU machine switches, for
0.1-8 s at a time and about a fifth of the time, between ~85 ns and ~350 ns per round trip,
with 1 MiB written on one CPU and read on the other taking 170 us and 970 us (two threads
pinned to CPUs 0 and 1, no library involved). Every library's collectives slow down 3-5x
with it. A batch is timed in the machine's slow state when a reading on either side of it
is above SLOW_HANDOFF times the lowest reading of the run (spread.py).

Standard library only: the MPI peer's program uses it without torch.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "lib" / "libhccl_go_probe.so"
ROUNDS = 1000  # ~0.1 ms in the fast state, ~0.4 ms in the slow one
TIMEOUT_S = 10.0  # the other rank must reach the same reading within this
PAGE = 4096


def path_for(token: str) -> str:
    return f"/dev/shm/hccl_go_bench_handoff_{token}"


class Handoff:
    """One rank's side of the probe; a rank other than 0 and 1, or a job whose ranks 0 and 1
    are on different hosts, reads None. Every rank calls the constructor together: it takes
    two barriers (the file exists before it is opened, and is unlinked once both mapped it)."""

    def __init__(self, rank: int, same_host: bool, token: str, barrier: Callable[[], object]):
        self.side = rank if rank in (0, 1) and same_host else None
        self.base = 0
        self.map: mmap.mmap | None = None
        path = path_for(token)
        if self.side is not None:
            self._fn = _load()
            if self._fn is None:
                self.side = None
        if self.side == 0:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            os.ftruncate(fd, PAGE)
            os.close(fd)
        barrier()
        if self.side is not None:
            fd = os.open(path, os.O_RDWR)
            try:
                self.map = mmap.mmap(fd, PAGE)
            finally:
                os.close(fd)
            self._word = ctypes.c_int64.from_buffer(self.map)
        barrier()
        if self.side == 0:
            os.unlink(path)

    def measure(self) -> float | None:
        """Nanoseconds per round trip now (both sides call it at the same point), None when
        this rank takes no part or the other side did not come."""
        if self.side is None:
            return None
        ns = self._fn(ctypes.addressof(self._word), self.side, self.base, ROUNDS, int(TIMEOUT_S * 1e9))
        self.base += 2 * ROUNDS
        return None if ns < 0 else float(ns)

    def close(self) -> None:
        if self.map is not None:
            del self._word
            self.map.close()
            self.map = None


def _load():
    """hccl_go_handoff from the package's probe library, None if it was not built."""
    try:
        lib = ctypes.CDLL(str(LIBRARY))
    except OSError:
        return None
    fn = lib.hccl_go_handoff
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    fn.restype = ctypes.c_int64
    return fn
