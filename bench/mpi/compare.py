"""Merges the --json of `python -m torch_hccl_go.bench` (hccl_go, gloo) and of
bench/mpi/allreduce.py (Open MPI) into one Markdown table per op, for the README:

    size | hccl_go (µs) | gloo (µs) | Open MPI (µs) | speed-up vs MPI | busbw hccl_go / MPI (GB/s)

speed-up vs MPI = Open MPI's time / hccl_go's time (above 1: hccl_go is faster), as the torch
bench's speed-up over gloo. Times are the medians both benchmarks report (median over batches
of the slowest rank); sizes are matched exactly (both round a size to whole elements and
shares the same way).

    python bench/mpi/compare.py --torch torch.json --mpi mpi.json
"""

from __future__ import annotations

import argparse
import json
import sys


def load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def by_key(doc: dict, backend: str) -> dict[tuple[str, int], dict]:
    """(op, size) -> result row of one backend, float32 only (the MPI bench measures float32)."""
    return {
        (r["op"], r["size"]): r for r in doc["results"] if r["backend"] == backend and r["dtype"] == "float32"
    }


def format_size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{nbytes} B"


def ok(row: dict | None) -> bool:
    return row is not None and row.get("status") == "ok" and row.get("time_us") is not None


def cell_time(row: dict | None) -> str:
    if row is None:
        return "-"
    if not ok(row):
        return row.get("status", "?")
    t = row["time_us"]
    return f"{t:.2f}" if t < 10 else f"{t:.1f}" if t < 1000 else f"{t:.0f}"


def cell_bw(row: dict | None) -> str:
    return f"{row['busbw_GBps']:.3f}" if ok(row) else "-"


def wrong_total(*rows: dict | None) -> int:
    return sum(r.get("wrong") or 0 for r in rows if r is not None)


def table(torch_doc: dict, mpi_doc: dict, first: str, other: str) -> list[str]:
    """The Markdown lines: one table per op that the MPI run measured."""
    ours, theirs, mpi = by_key(torch_doc, first), by_key(torch_doc, other), by_key(mpi_doc, "mpi")
    lines = []
    ops = list(dict.fromkeys(op for op, _ in mpi))
    for op in ops:
        lines += [
            "",
            f"{op}, float32, world {mpi_doc['world_size']}:",
            "",
            f"| size | {first} (µs) | {other} (µs) | Open MPI (µs) | {first} vs MPI "
            f"| {first} busbw (GB/s) | MPI busbw (GB/s) |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for _, size in sorted(k for k in mpi if k[0] == op):
            a, b, m = ours.get((op, size)), theirs.get((op, size)), mpi[(op, size)]
            speed = f"{m['time_us'] / a['time_us']:.2f}×" if ok(a) and ok(m) else "n/a"
            lines.append(
                f"| {format_size(size)} | {cell_time(a)} | {cell_time(b)} | {cell_time(m)} | {speed} "
                f"| {cell_bw(a)} | {cell_bw(m)} |"
            )
            if wrong_total(a, b, m):
                lines.append(f"<!-- WRONG RESULTS at {format_size(size)}: {wrong_total(a, b, m)} elements -->")
    return lines


def header(torch_doc: dict, mpi_doc: dict) -> list[str]:
    env = mpi_doc.get("environment", {})
    mca = " ".join(f"{k.removeprefix('OMPI_MCA_')}={v}" for k, v in sorted(env.get("mca", {}).items()))
    return [
        f"# torch bench: {torch_doc.get('command', '?')}",
        f"# MPI bench:   {mpi_doc.get('command', '?')}",
        f"# {env.get('mpi_library', '?')}; mpi4py {env.get('mpi4py', '?')}; MCA {mca or '(defaults)'}",
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="Merge the torch bench's and the MPI bench's --json into one table.")
    p.add_argument("--torch", required=True, metavar="PATH", help="--json of python -m torch_hccl_go.bench")
    p.add_argument("--mpi", required=True, metavar="PATH", help="--json of bench/mpi/allreduce.py")
    p.add_argument("--first", default="hccl_go", help="the backend compared with MPI (default hccl_go)")
    p.add_argument("--other", default="gloo", help="the second torch backend shown (default gloo)")
    a = p.parse_args(argv)
    torch_doc, mpi_doc = load(a.torch), load(a.mpi)
    if torch_doc.get("world_size") != mpi_doc.get("world_size"):
        print(
            f"compare: world sizes differ (torch {torch_doc.get('world_size')}, MPI {mpi_doc.get('world_size')})",
            file=sys.stderr,
        )
        return 2
    print("\n".join(header(torch_doc, mpi_doc) + table(torch_doc, mpi_doc, a.first, a.other)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
