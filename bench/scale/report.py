"""The table of a scale run: reads the rank-*.json files scale_rank wrote.

    python3 bench/scale/report.py DIR [--json OUT]

Prints, for the whole job: when the last rank had its communicator, how long
the init call itself took (median and max over ranks), how many checks ran
and failed, the split's cost, and a small all_reduce's time; then per rank
(median and max over ranks) the sockets, descriptors, threads and memory
after init, after the split and at the end, and what the library added to
each beyond the process's own (its state before the first call). Exits 1
when a rank is missing or a check failed. Standard library only.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys


def load(directory: str) -> list[dict]:
    ranks = []
    for path in sorted(glob.glob(os.path.join(directory, "rank-*.json"))):
        with open(path) as f:
            ranks.append(json.load(f))
    return sorted(ranks, key=lambda r: r["rank"])


def spread(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), max(values)


def summary(ranks: list[dict]) -> dict:
    n = ranks[0]["nranks"]
    first_start = min(r["t_start"] for r in ranks)
    out = {
        "nranks": n,
        "ranks_per_host": ranks[0]["ranks_per_host"],
        "api": ranks[0].get("api", "C API"),
        "ranks_reported": len(ranks),
        "job_ready_s": max(r["t_init"] for r in ranks) - first_start,
        "init_call_s": spread([r["t_init"] - r["t_addrs"] for r in ranks]),
        "checked_s": max(r["t_checked"] for r in ranks) - max(r["t_init"] for r in ranks),
        "checks": sum(r["checks"] for r in ranks),
        "failed": sum(r["failed"] for r in ranks),
        "failures": {r["rank"]: r["failures"] for r in ranks if r["failed"]},
        "split_s": spread([r["split_s"] for r in ranks]),
        "small_all_reduce_us": spread([r["small_all_reduce_us"] for r in ranks]),
        "per_rank": {},
    }
    for stage in ("after_init", "after_split", "end"):
        row = {}
        for key in ("sockets", "fds", "threads", "rss_kb", "pss_kb", "anon_kb", "shmem_kb"):
            row[key] = spread([r[stage][key] for r in ranks])
            row[key + "_added"] = spread([r[stage][key] - r["before"][key] for r in ranks])
        out["per_rank"][stage] = row
    if all("cpu_init_s" in r for r in ranks):
        out["cpu_init_s"] = spread([r["cpu_init_s"] for r in ranks])
        out["cores"] = ranks[0]["cores"]
    if "lazy_links" in ranks[0]:
        out["lazy_links"] = ranks[0]["lazy_links"]  # HCCL_GO_LAZY_LINKS, "auto" when unset
    if all("op_times" in r for r in ranks):
        out["op_times"] = op_times(ranks)
        out["infos"] = next((r["infos"] for r in ranks if r.get("infos")), {})
    return out


def op_times(ranks: list[dict]) -> list[dict]:
    """Each (config, op, algo, bytes): an op ends when its last rank does, so
    us is the max over ranks of their medians (us_median: their median) and
    us_min the max over ranks of their best calls."""
    by_key: dict[tuple, list[dict]] = {}
    for r in ranks:
        for t in r["op_times"]:
            by_key.setdefault((t["config"], t["op"], t["algo"], t["bytes"]), []).append(t)
    out = []
    for (c, op, algo, n), ts in by_key.items():
        us = [t["us"] for t in ts]
        row = {"config": c, "op": op, "algo": algo, "bytes": n, "us": max(us), "us_median": statistics.median(us)}
        if all("us_min" in t for t in ts):
            row["us_min"] = max(t["us_min"] for t in ts)
        out.append(row)
    return out


def _line(label: str, value: str) -> str:
    return f"  {label:<56} {value}"


def _pair(row: dict, key: str, scale: float = 1.0, fmt: str = "{:.0f}") -> str:
    m, x = row[key]
    return f"{fmt.format(m / scale)}/{fmt.format(x / scale)}"


def render(s: dict) -> str:
    mb = 1024.0
    init, split, small = s["init_call_s"], s["split_s"], s["small_all_reduce_us"]
    split_ms = f"{split[0] * 1e3:8.1f} / {split[1] * 1e3:.1f} ms"
    lines = [
        f"# scale run: {s['nranks']} ranks, {s['ranks_per_host']} per emulated host "
        f"({-(-s['nranks'] // s['ranks_per_host'])} hosts), {s['api']}, one machine",
        _line("job ready (first rank started -> last rank initialised)", f"{s['job_ready_s']:8.2f} s"),
        _line("init call, median / max over ranks", f"{init[0]:8.2f} / {init[1]:.2f} s"),
        f"  every collective checked: {s['checks']} checks, {s['failed']} failed, in {s['checked_s']:.2f} s",
        _line("split (or groups) in halves + checked ops, median / max", split_ms),
        _line("8 B all_reduce, median / max over ranks", f"{small[0]:8.1f} / {small[1]:.1f} us"),
    ]
    if "cpu_init_s" in s:
        cpu = s["cpu_init_s"]
        label = f"CPU of the init call, median / max ({s['cores']} cores)"
        lines.append(_line(label, f"{cpu[0]:8.3f} / {cpu[1]:.3f} s"))
    lines += [
        "",
        "# per rank: median / max over ranks (added: beyond the process's state before its first call)",
        f"  {'stage':<12} {'sockets':>10} {'fds':>10} {'threads':>10} {'added':>8} "
        f"{'RSS MB':>14} {'PSS MB':>14} {'PSS added':>14} {'anon added':>14}",
    ]
    for stage, row in s["per_rank"].items():
        lines.append(
            f"  {stage:<12} {_pair(row, 'sockets'):>10} {_pair(row, 'fds'):>10} {_pair(row, 'threads'):>10} "
            f"{_pair(row, 'threads_added'):>8} {_pair(row, 'rss_kb', mb, '{:.1f}'):>14} "
            f"{_pair(row, 'pss_kb', mb, '{:.1f}'):>14} {_pair(row, 'pss_kb_added', mb, '{:.1f}'):>14} "
            f"{_pair(row, 'anon_kb_added', mb, '{:.1f}'):>14}"
        )
    if s.get("op_times"):
        lines += [
            "",
            "# op times (the cost model's bytes): max / median over ranks of their median call; max of their best",
        ]
        head = f"  {'config':<6} {'op':<14} {'algo':<6} {'bytes':>10}"
        lines.append(f"{head} {'max us':>12} {'median us':>12} {'best us':>12}")
        for t in s["op_times"]:
            key = f"  {t['config']:<6} {t['op']:<14} {t['algo']:<6} {t['bytes']:>10}"
            lines.append(f"{key} {t['us']:>12.1f} {t['us_median']:>12.1f} {t.get('us_min', float('nan')):>12.1f}")
    if s["failed"]:
        lines.append("")
        lines.append("# failed checks (first ranks):")
        for rank, msg in list(s["failures"].items())[:8]:
            lines.append(f"  rank {rank}: {msg}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--json", help="write the summary and every rank's record here")
    args = ap.parse_args()
    ranks = load(args.dir)
    if not ranks:
        print(f"no rank-*.json in {args.dir}", file=sys.stderr)
        return 1
    s = summary(ranks)
    topo_file = os.path.join(args.dir, "topo.json")
    if os.path.exists(topo_file):
        with open(topo_file) as f:
            s["topology"] = json.load(f)
    print(render(s))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": s, "ranks": ranks}, f, indent=1)
    missing = s["nranks"] - s["ranks_reported"]
    if missing:
        print(f"# {missing} of {s['nranks']} ranks wrote no record", file=sys.stderr)
    return 1 if missing or s["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
