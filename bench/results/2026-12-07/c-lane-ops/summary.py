"""Medians over the jobs of run.sh: each op, size and condition, after against before.

    python3 bench/results/2026-12-07/c-lane-ops/summary.py DIR
"""

import json
import statistics
import sys
from pathlib import Path


def load(d: Path, kind: str, version: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(d.glob(f"{kind}_{version}_*.json"))]


def main() -> None:
    d = Path(sys.argv[1])
    conds = ["b2b", "8B x50", "idle 1ms", "idle 10ms", "idle 100ms", "compute 3ms"]
    print("# one op right after each condition: median over jobs of each job's median (us), after / before")
    print(f"# {'op':<15} {'size':>8} " + " ".join(f"{c:>22}" for c in conds))
    after, before = load(d, "history", "after"), load(d, "history", "before")
    for r in after[0]["results"]:
        key = (r["op"], r["size"])
        cells = []
        for c in conds:
            vals = {}
            for name, jobs in (("after", after), ("before", before)):
                xs = []
                for job in jobs:
                    for q in job["results"]:
                        if (q["op"], q["size"]) == key and c in q.get("history_us", {}):
                            xs.append(statistics.median(q["history_us"][c]))
                vals[name] = statistics.median(xs) if xs else float("nan")
            cells.append(f"{vals['after']:7.1f} / {vals['before']:7.1f} {vals['after'] / vals['before']:4.2f}")
        print(f"  {key[0]:<15} {key[1]:>8} " + " ".join(f"{x:>22}" for x in cells))
    print("# warm medians: median over jobs (us), after / before")
    after, before = load(d, "warm", "after"), load(d, "warm", "before")
    for r in after[0]["results"]:
        key = (r["op"], r["size"])
        a = statistics.median(q["time_us"] for job in after for q in job["results"] if (q["op"], q["size"]) == key)
        b = statistics.median(q["time_us"] for job in before for q in job["results"] if (q["op"], q["size"]) == key)
        print(f"  {key[0]:<15} {key[1]:>8} {a:8.2f} / {b:8.2f} {a / b:4.2f}")


if __name__ == "__main__":
    main()
