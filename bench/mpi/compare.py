"""Turns the --json of `python -m torch_hccl_go.bench --peers mpi` (hccl_go, gloo and Open MPI)
into one Markdown table per op, for the README:

    size | hccl_go (µs) | gloo (µs) | Open MPI (µs) | hccl_go vs MPI | busbw hccl_go / MPI (GB/s)

hccl_go vs MPI = Open MPI's time / hccl_go's time (above 1: hccl_go is faster), as the
benchmark's own ratio. Times are the figures the benchmark reports: the median over batches
of the slowest rank, and with --jobs the median over jobs of that (its "summary" rows).

    python bench/mpi/compare.py bench.json
"""

from __future__ import annotations

import argparse
import json
import sys


def load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def rows(doc: dict) -> list[dict]:
    """The figures that stand for the run: "summary" of a --jobs/--peers run, else "results"."""
    return doc["summary"] if "summary" in doc else doc["results"]


def by_key(doc: dict, backend: str) -> dict[tuple[str, int], dict]:
    """(op, size) -> row of one backend, float32 only (the MPI program measures float32)."""
    return {(r["op"], r["size"]): r for r in rows(doc) if r["backend"] == backend and r["dtype"] == "float32"}


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


def table(doc: dict, first: str, other: str) -> list[str]:
    """The Markdown lines: one table per op that Open MPI was timed on."""
    ours, theirs, mpi = by_key(doc, first), by_key(doc, other), by_key(doc, "mpi")
    lines = []
    for op in dict.fromkeys(op for op, _ in mpi):
        lines += [
            "",
            f"{op}, float32, world {doc['world_size']}:",
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


def header(doc: dict) -> list[str]:
    env = next((job["backend_info"]["mpi"] for job in doc.get("jobs", []) if "mpi" in job["backend_info"]), {})
    mca = " ".join(f"{k.removeprefix('OMPI_MCA_')}={v}" for k, v in sorted(env.get("mca", {}).items()))
    return [
        f"# {doc.get('command', '?')}",
        f"# {env.get('mpi_library', '?')}; mpi4py {env.get('mpi4py', '?')}; MCA {mca or '(defaults)'}",
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="Markdown tables from the --json of a --peers mpi run.")
    p.add_argument("json_path", metavar="PATH", help="--json of python -m torch_hccl_go.bench --peers mpi")
    p.add_argument("--first", default="hccl_go", help="the backend compared with MPI (default hccl_go)")
    p.add_argument("--other", default="gloo", help="the second torch backend shown (default gloo)")
    a = p.parse_args(argv)
    doc = load(a.json_path)
    if not by_key(doc, "mpi"):
        print(f"compare: no Open MPI figures in {a.json_path} (was mpi skipped?)", file=sys.stderr)
        return 2
    print("\n".join(header(doc) + table(doc, a.first, a.other)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
