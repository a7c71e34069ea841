"""--history tables: per backend and (op, dtype), the warm median against the median of a
single op right after each condition (history.py), and their ratio. A ratio well above 1
is a slow state that the warm loop's rewarm hides."""

from __future__ import annotations

from itertools import groupby
from typing import TextIO

from .history import CONDITIONS
from .report import format_us
from .results import Result
from .sizes import format_size

CELL_W = 17  # "12345.6  123.45x"
CONTROL = "b2b"  # the per-op twin of the warm median
CONTROL_BAND = 1.25  # b2b beyond 1/1.25 .. 1.25 of warm: the library's single op is not its loop's


def print_history(results: list[Result], names: tuple[str, ...], out: TextIO, what: str = "") -> None:
    """results in report order (report.in_report_order)."""
    for _, group in groupby(results, key=lambda r: (r.op, r.dtype)):
        group = list(group)
        for name in names:
            rows = [r for r in group if r.backend == name and r.ok and r.history]
            if rows:
                print_history_table(rows, name, out, what)


def print_history_table(rows: list[Result], name: str, out: TextIO, what: str = "") -> None:
    r0 = rows[0]
    print(
        f"\n# history {name}: {r0.op}  {r0.dtype}  world {r0.world}: median time (us) of one op right after "
        f"each condition, x = that / warm{what}",
        file=out,
    )
    conditions = [c.name for c in CONDITIONS if any(c.name in r.history for r in rows)]
    print(f"#{'size':>11} {'warm':>10}" + "".join(f" {c:>{CELL_W}}" for c in conditions), file=out)
    worst: tuple[float, str, int] | None = None
    for r in rows:
        line = f" {format_size(r.size):>11} {format_us(r.time_us):>10}"
        for c in conditions:
            t = r.history_median(c)
            if t is None:
                line += f" {'-':>{CELL_W}}"
                continue
            ratio = t / r.time_s
            line += f" {format_us(t * 1e6) + f' {ratio:6.2f}x':>{CELL_W}}"
            if worst is None or ratio > worst[0]:
                worst = (ratio, c, r.size)
        print(line, file=out)
    if worst is not None:
        print(f"# highest: {worst[1]} at {format_size(worst[2])}, {worst[0]:.2f}x the warm median", file=out)
    off = [(r.size, t / r.time_s) for r in rows if (t := r.history_median(CONTROL)) is not None]
    off = [(size, x) for size, x in off if not 1 / CONTROL_BAND <= x <= CONTROL_BAND]
    if off:
        listed = ", ".join(f"{format_size(size)} ({x:.2f}x)" for size, x in off)
        print(f"# {CONTROL} is off the warm median at {listed}: compare the conditions with {CONTROL} there", file=out)
