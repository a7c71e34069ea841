"""One table per (op, dtype) with every backend and peer side by side: each one's time and
its ratio to the first backend's time (above 1: the first is faster), as report.py's
speed-up. A library without the case (a peer that lacks the op) shows "-"; one that could
not time it shows its status (n/a, error, skipped).
"""

from __future__ import annotations

from itertools import groupby
from typing import TextIO

from .report import format_us
from .results import Result
from .sizes import format_size

TIME_W, RATIO_W = 11, 8


def print_compare(results: list[Result], names: tuple[str, ...], out: TextIO, what: str = "median time") -> None:
    """results in report order (report.in_report_order); names: the first is the reference."""
    first = names[0]
    for (op, dtype), group in groupby(results, key=lambda r: (r.op, r.dtype)):
        rows = {(r.backend, r.size): r for r in group}
        world = next(iter(rows.values())).world
        print(f"\n# {op}  {dtype}  world {world}: {what} (us); ratio = time / {first}'s time", file=out)
        head = f"#{'size':>11} {first:>{TIME_W}}"
        units = f"#{'':>11} {'(us)':>{TIME_W}}"
        for name in names[1:]:
            head += f" | {name:>{TIME_W + 1 + RATIO_W}}"
            units += f" | {'(us)':>{TIME_W}} {'ratio':>{RATIO_W}}"
        print(head, file=out)
        print(units, file=out)
        for size in sorted({size for _, size in rows}):
            ref = rows.get((first, size))
            line = f" {format_size(size):>11} {cell(ref):>{TIME_W}}"
            for name in names[1:]:
                other = rows.get((name, size))
                line += f" | {cell(other):>{TIME_W}} {ratio_cell(other, ref):>{RATIO_W}}"
            print(line, file=out)


def cell(r: Result | None) -> str:
    if r is None:
        return "-"
    return format_us(r.time_us) if r.ok else r.status


def ratio_cell(r: Result | None, ref: Result | None) -> str:
    if r is None or ref is None or not r.ok or not ref.ok:
        return "-"
    return f"{r.time_s / ref.time_s:.2f}x"
