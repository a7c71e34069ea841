"""The printed report: an nccl-tests style table per backend, then the comparison tables.

Times are medians over batches of the per-iteration time of the slowest rank, in
microseconds; bandwidths in GB/s (1e9 bytes/s). speed-up = the other backend's time
divided by the first backend's, so above 1 means the first backend is faster.

Standard library only: the MPI peer's program (peers/mpi_program.py) prints its table
with it, without torch.
"""

from __future__ import annotations

from itertools import groupby, pairwise
from typing import TextIO

from .results import NOT_AVAILABLE, OK, SKIPPED, Result
from .sizes import format_size

CLIFF = 0.9  # busbw below 90% of the previous size's is reported as a cliff

_HEADER = (
    f"#{'size':>11} {'count':>13} {'type':>9} {'redop':>6} {'root':>5} {'time':>11} {'algbw':>8} {'busbw':>8} "
    f"{'#wrong':>7}\n"
    f"#{'(B)':>11} {'(elements)':>13} {'':>9} {'':>6} {'':>5} {'(us)':>11} {'(GB/s)':>8} {'(GB/s)':>8}"
)


def in_report_order(results: list[Result], ops: tuple[str, ...], names: tuple[str, ...]) -> list[Result]:
    """Results of several jobs in the order the tables group them: by op (as --ops lists
    them), dtype (as first seen), size, then backend (as names lists them)."""
    dtypes = list(dict.fromkeys(r.dtype for r in results))

    def key(r: Result) -> tuple[int, int, int, int]:
        op = ops.index(r.op) if r.op in ops else len(ops)
        name = names.index(r.backend) if r.backend in names else len(names)
        return (op, dtypes.index(r.dtype), r.size, name)

    return sorted(results, key=key)


def print_report(results: list[Result], backends: tuple[str, ...], out: TextIO) -> None:
    """Tables for each (op, dtype), in the order the sweep ran them."""
    for (op, dtype), group in groupby(results, key=lambda r: (r.op, r.dtype)):
        group = list(group)
        world, redop = group[0].world, group[0].redop
        print(f"\n# {op}  {dtype}  redop {redop}  world {world}", file=out)
        for backend in backends:
            print_backend_table([r for r in group if r.backend == backend], backend, out)
        for other in backends[1:]:
            print_comparison(group, backends[0], other, out)


def print_backend_table(rows: list[Result], backend: str, out: TextIO) -> None:
    print(f"#\n# backend {backend}", file=out)
    print(_HEADER, file=out)
    notes: dict[str, str] = {}
    for r in rows:
        lead = f" {r.size:>11} {r.count:>13} {r.dtype:>9} {r.redop:>6} {r.root:>5}"
        if r.ok:
            wrong = "-" if r.wrong is None else str(r.wrong)
            print(f"{lead} {_time(r.time_us)} {r.algbw:8.2f} {r.busbw:8.2f} {wrong:>7}", file=out)
        else:
            print(f"{lead} {r.status:>11} {r.status:>8} {r.status:>8} {'':>7}", file=out)
            notes.setdefault(r.reason, r.status)
    for reason, status in notes.items():
        print(f"# {status}: {reason}", file=out)
    speeds = [r for r in rows if r.ok]
    if speeds:
        cliffs = _cliffs(speeds)
        print(f"# cliffs (busbw < {CLIFF:.0%} of the previous size): {', '.join(cliffs) or 'none'}", file=out)


def print_comparison(rows: list[Result], first: str, other: str, out: TextIO) -> None:
    a = {r.size: r for r in rows if r.backend == first}
    b = {r.size: r for r in rows if r.backend == other}
    print(f"#\n# {first} vs {other}: speed-up = {other} time / {first} time", file=out)
    print(
        f"#{'size':>11} {first + ' (us)':>14} {other + ' (us)':>14} {'speed-up':>9} "
        f"{first + ' busbw':>14} {other + ' busbw':>14}",
        file=out,
    )
    wins, compared, ratios = 0, 0, []
    for size in sorted(a):
        ra, rb = a[size], b.get(size)
        if rb is None:
            continue
        ratio = rb.time_us / ra.time_us if ra.ok and rb.ok else None
        if ratio is not None:
            compared += 1
            wins += ratio > 1
            ratios.append((ratio, size))
        speed_up = f"{ratio:8.2f}x" if ratio is not None else f"{'n/a':>9}"
        print(
            f" {format_size(size):>11} {_cell_time(ra):>14} {_cell_time(rb):>14} {speed_up} "
            f"{_cell_bw(ra):>14} {_cell_bw(rb):>14}",
            file=out,
        )
    if ratios:
        lo, hi = min(ratios), max(ratios)
        print(
            f"# {first} faster at {wins}/{compared} sizes; speed-up from {lo[0]:.2f}x ({format_size(lo[1])}) "
            f"to {hi[0]:.2f}x ({format_size(hi[1])})",
            file=out,
        )


def _cliffs(rows: list[Result]) -> list[str]:
    out = []
    for prev, cur in pairwise(rows):
        if cur.busbw < CLIFF * prev.busbw:
            out.append(f"{format_size(cur.size)} ({cur.busbw / prev.busbw:.0%})")
    return out


def format_us(us: float) -> str:
    """Microseconds with three or four significant digits: 7.31, 190.3, 23883."""
    return f"{us:.2f}" if us < 100 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def _time(us: float) -> str:
    return f"{us:11.2f}" if us < 1e5 else f"{us:11.0f}"


def _cell_time(r: Result) -> str:
    return f"{r.time_us:.2f}" if r.ok else r.status


def _cell_bw(r: Result) -> str:
    return f"{r.busbw:.3f}" if r.ok else r.status


def exit_code(results: list[Result]) -> int:
    """1 when any result was wrong or any backend failed (n/a is not a failure)."""
    bad = [r for r in results if (r.wrong or 0) > 0 or r.status not in (OK, NOT_AVAILABLE, SKIPPED)]
    return 1 if bad else 0
