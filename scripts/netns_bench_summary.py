"""The table of scripts/netns_bench.sh: reads the raw JSON of a results folder and prints
each figure against its target.

    .venv/bin/python scripts/netns_bench_summary.py bench/results/<date>

Speed-up = gloo's time / hccl_go's (the bench's medians of the slowest rank, both backends
in the same job); DDP: hccl_go's step / gloo's (medians of the slowest rank per step). The
arena phases of the 2x2 all_reduce are compared, as busbw, with the single-host all_reduce
of the same size (2 ranks in the arena: its reduce-scatter and all-gather are the same two
phases). A figure whose file is missing (a case not run) is left out.
"""

from __future__ import annotations

import json
import os
import statistics
import sys


def load(folder: str, name: str) -> dict | None:
    path = os.path.join(folder, "raw", name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def bench_times(doc: dict, op: str) -> dict[str, float]:
    """Median seconds per backend of op (the one size of the run)."""
    return {r["backend"]: r["time_us"] / 1e6 for r in doc["results"] if r["op"] == op and r.get("time_us")}


def rows(folder: str) -> list[tuple[str, str, str, str, bool | None]]:
    """(what, hccl_go, gloo, figure against target, met) for every figure present."""
    out = []

    def speedup(name: str, what: str, op: str, target: float) -> None:
        doc = load(folder, name)
        if doc is None:
            return
        t = bench_times(doc, op)
        if "hccl_go" not in t or "gloo" not in t:
            out.append((what, "-", "-", "missing result", False))
            return
        s = t["gloo"] / t["hccl_go"]
        verdict = f"{s:.2f}x gloo (target >= {target}x)"
        out.append((what, f"{t['hccl_go']:.3f} s", f"{t['gloo']:.3f} s", verdict, s >= target))

    speedup("2x2_allreduce.json", "2x2 all_reduce 64 MiB", "all_reduce", 1.4)
    speedup("2x2_allreduce_fp16.json", "2x2 all_reduce 64 MiB, hccl_go fp16", "all_reduce", 2.6)
    speedup("2x2_movement.json", "2x2 all_gather 64 MiB", "all_gather", 1.3)
    speedup("2x2_movement.json", "2x2 reduce_scatter 64 MiB", "reduce_scatter", 1.3)

    for name, what, target in (
        ("2x2_ddp.json", "2x2 DDP step, 25 MB of gradients", 0.75),
        ("2x2_ddp_fp16.json", "2x2 DDP step, hccl_go fp16", 0.5),
    ):
        doc = load(folder, name)
        if doc is None:
            continue
        steps = {r["backend"]: r["step_ms"] / 1e3 for r in doc["results"]}
        ratio = steps["hccl_go"] / steps["gloo"]
        out.append(
            (
                what,
                f"{steps['hccl_go']:.3f} s",
                f"{steps['gloo']:.3f} s",
                f"{ratio:.2f}x gloo's step (target <= {target}x)",
                ratio <= target,
            )
        )

    speedup("fastpairs8_allreduce.json", "8 hosts fast pairs, all_reduce 64 MiB", "all_reduce", 1.5)

    phases, single = load(folder, "2x2_phases.json"), load(folder, "single_allreduce.json")
    if phases is not None:
        shared = [r for r in phases["ranks"] if r["local_ranks"] > 1 and r["arena_busbw_gbps"]]
        bw = statistics.median(r["arena_busbw_gbps"] for r in shared)
        wall = statistics.median(r["wall_s"] for r in phases["ranks"])
        arena = statistics.median(r["arena_s"] for r in shared)
        inter = statistics.median(r["inter_s"] for r in phases["ranks"])
        what = f"2x2 arena phases of all_reduce 64 MiB (wall {wall:.3f} s, arena {arena:.3f} s, inter {inter:.3f} s)"
        if single is not None:
            ref = next(r["busbw_GBps"] for r in single["results"] if r["backend"] == "hccl_go")
            ratio = bw / ref
            verdict = f"{ratio:.0%} of single host (target >= 80%)"
            out.append((what, f"{bw:.2f} GB/s", f"single host {ref:.2f} GB/s", verdict, ratio >= 0.8))
        else:
            out.append((what, f"{bw:.2f} GB/s", "-", "no single-host run", None))
        # The same phases' own work (arena time less the waits for the host's other rank),
        # against the single-host arena alone and under the same load (single2: two
        # single-host jobs at once, 4 ranks on the machine as in 2x2).
        work = [r["arena_work_busbw_gbps"] for r in shared if r.get("arena_work_busbw_gbps")]
        if work:
            wbw = statistics.median(work)
            loaded = [load(folder, f"single2_allreduce_{j}.json") for j in (0, 1)]
            loaded = [
                next(r["busbw_GBps"] for r in doc["results"] if r["backend"] == "hccl_go")
                for doc in loaded
                if doc is not None
            ]
            what = "2x2 arena phases' own work (arena time less waiting)"
            refs, verdicts = [], []
            if single is not None:
                refs.append(f"single host {ref:.2f} GB/s")
                verdicts.append(f"{wbw / ref:.0%} of single host")
            if loaded:
                lref = statistics.median(loaded)
                refs.append(f"under the same load {lref:.2f} GB/s")
                verdicts.append(f"{wbw / lref:.0%} of it under the same load")
            out.append((what, f"{wbw:.2f} GB/s", "; ".join(refs) or "-", "; ".join(verdicts) or "-", None))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    folder = argv[0]
    commit = ""
    if os.path.exists(os.path.join(folder, "commit")):
        commit = open(os.path.join(folder, "commit")).read().strip()
    print(f"# {folder} (commit {commit or '?'})")
    print("| figure | hccl_go | gloo / reference | result | target met |")
    print("|---|---:|---:|---|---|")
    for what, a, b, res, met in rows(folder):
        mark = "n/a" if met is None else ("yes" if met else "no")
        print(f"| {what} | {a} | {b} | {res} | {mark} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
