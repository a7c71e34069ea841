"""--history tables: per backend and (op, dtype), the warm median against the median of a
single op right after each condition (history.py), and their ratio; then the floor, a
trivial local op after the same conditions, and how far the op's time goes beyond it. A
ratio well above 1 that the floor does not share is a slow state of the library that the
warm loop's rewarm hides; one that the floor shares is the machine's."""

from __future__ import annotations

from itertools import groupby
from typing import TextIO

from .history import CONDITIONS, floor_key
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
        f"each condition, x = that / warm{what}; floor: a 2-element add after the same condition, x = that / its b2b",
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
        if (floor := floor_line(r, conditions)) is not None:
            print(floor, file=out)
    if worst is not None:
        print(f"# highest: {worst[1]} at {format_size(worst[2])}, {worst[0]:.2f}x the warm median", file=out)
    print_beyond_floor(rows, conditions, out)
    off = [(r.size, t / r.time_s) for r in rows if (t := r.history_median(CONTROL)) is not None]
    off = [(size, x) for size, x in off if not 1 / CONTROL_BAND <= x <= CONTROL_BAND]
    if off:
        listed = ", ".join(f"{format_size(size)} ({x:.2f}x)" for size, x in off)
        print(f"# {CONTROL} is off the warm median at {listed}: compare the conditions with {CONTROL} there", file=out)


def floor_line(r: Result, conditions: list[str]) -> str | None:
    """The floor's row under r's: its time after each condition, x = that / its time after
    b2b; None when r has no floor."""
    floors = {c: t for c in conditions if (t := r.history_median(floor_key(c))) is not None}
    if not floors:
        return None
    base = floors.get(CONTROL)
    line = f" {'floor':>11} {'':>10}"
    for c in conditions:
        if c not in floors:
            line += f" {'-':>{CELL_W}}"
        elif base:
            line += f" {format_us(floors[c] * 1e6) + f' {floors[c] / base:6.2f}x':>{CELL_W}}"
        else:
            line += f" {format_us(floors[c] * 1e6):>{CELL_W}}"
    return line


def print_beyond_floor(rows: list[Result], conditions: list[str], out: TextIO) -> None:
    """The largest share of an op's time after a condition that the floor after the same
    condition does not explain, as a multiple of the warm median: (op - floor) / warm."""
    worst: tuple[float, str, Result, float, float] | None = None
    for r in rows:
        for c in conditions:
            t, f = r.history_median(c), r.history_median(floor_key(c))
            if t is None or f is None:
                continue
            x = (t - f) / r.time_s
            if worst is None or x > worst[0]:
                worst = (x, c, r, t, f)
    if worst is not None:
        x, c, r, t, f = worst
        print(
            f"# beyond the floor: at most {x:.2f}x the warm median ({c} at {format_size(r.size)}: "
            f"op {format_us(t * 1e6)} us, floor {format_us(f * 1e6)} us, warm {format_us(r.time_us)} us)",
            file=out,
        )
