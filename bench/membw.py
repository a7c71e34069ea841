"""Memory bandwidth of one core at the sizes of the all_reduce sweep, for reading its busbw.

    .venv/bin/python bench/membw.py [MiB ...]      (default 8 32 64 128 512)

Times numpy's c = a + b on uint8 arrays of each size (median of repeats) and prints the bytes
moved per second (three buffers). Where the three buffers stop fitting in the host's cache,
this drops, and so does every memory-bound collective: the step in hccl_go's busbw from 32 MiB
to 128 MiB is that boundary, not a protocol change.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def moved_gbps(mib: int) -> float:
    n = mib << 20
    a, b = np.ones(n, dtype=np.uint8), np.ones(n, dtype=np.uint8)
    c = np.empty_like(a)
    times = []
    for _ in range(max(3, 2048 // mib)):
        t0 = time.perf_counter()
        np.add(a, b, out=c)
        times.append(time.perf_counter() - t0)
    return 3 * n / statistics.median(times) / 1e9


def main(argv: list[str]) -> None:
    for mib in [int(x) for x in argv] or [8, 32, 64, 128, 512]:
        print(f"{mib:5d} MiB: c = a + b moves {moved_gbps(mib):6.1f} GB/s")


if __name__ == "__main__":
    main(sys.argv[1:])
