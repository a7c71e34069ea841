"""What a new process group costs: time of new_group plus its first op, and the file
descriptors and threads each extra group keeps, hccl_go against gloo.

    flock /tmp/bench.lock .venv/bin/python bench/group_cost.py --world 4 --groups 20

Every rank of a world of --world ranks (spawned on this host, each with a default group of the
backend under test) creates --groups groups of all ranks but the last (new_group, members
only, non-members calling too), runs one all_reduce on each, and reads /proc/self/fd and
/proc/self/task after the first and after the last group. Printed per backend: the median
time of new_group + first op on rank 0 (each group creation ends with a barrier on the
default group, so ranks start the next one together), and the fds and threads per extra
group (growth from the first group to the last, divided by the groups in between), the
largest over ranks; then the time of a 64-byte all_reduce on the default group and on the last
group (rank 0, mean of 200). On one host, HCCL_GO_SPLIT_GROUPS=1 in the environment
measures hccl_go's groups as splits, and the default (auto) or 0 its groups connected from
scratch.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _counts() -> tuple[int, int]:
    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def _worker(rank: int, world: int, port: int, backend: str, groups: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    if backend == "hccl_go":
        import torch_hccl_go  # noqa: F401 - registers the backend
    dist.init_process_group(backend, rank=rank, world_size=world)
    t = torch.ones(16)
    dist.all_reduce(t)  # the default group is fully set up
    members = list(range(world - 1)) if world > 2 else list(range(world))
    times, counts = [], []
    for _ in range(groups):
        dist.barrier()
        start = time.perf_counter()
        g = dist.new_group(members)
        if rank in members:
            dist.all_reduce(t, group=g)
        times.append(time.perf_counter() - start)
        counts.append(_counts())
    # Small all_reduce latency on the last group against the default group.
    lat = {}
    for name, group in (("default", None), ("group", g)):
        dist.barrier()
        if group is None or rank in members:
            for _ in range(20):
                dist.all_reduce(t, group=group)
            start = time.perf_counter()
            for _ in range(200):
                dist.all_reduce(t, group=group)
            lat[name] = (time.perf_counter() - start) / 200
    dist.barrier()
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"times": times, "counts": counts, "member": rank in members, "lat": lat}, f)
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(backend: str, world: int, groups: int, tmp: str) -> dict:
    out = os.path.join(tmp, f"group_cost_{backend}_{world}")
    mp.start_processes(_worker, args=(world, _free_port(), backend, groups, out), nprocs=world, start_method="spawn")
    ranks = []
    for r in range(world):
        with open(f"{out}.{r}") as f:
            ranks.append(json.load(f))
        os.unlink(f"{out}.{r}")
    first, last = 0, groups - 1
    per_group = max(1, last - first)
    fds = max((d["counts"][last][0] - d["counts"][first][0]) / per_group for d in ranks)
    threads = max((d["counts"][last][1] - d["counts"][first][1]) / per_group for d in ranks)
    t0 = ranks[0]["times"]
    return {
        "backend": backend,
        "world": world,
        "groups": groups,
        "new_group_first_op_ms_median": round(statistics.median(t0) * 1e3, 2),
        "new_group_first_op_ms_min": round(min(t0) * 1e3, 2),
        "fds_per_extra_group": round(fds, 2),
        "threads_per_extra_group": round(threads, 2),
        "fds_after_last_group": max(d["counts"][last][0] for d in ranks),
        "threads_after_last_group": max(d["counts"][last][1] for d in ranks),
        "allreduce_64B_us_default_group": round(ranks[0]["lat"]["default"] * 1e6, 1),
        "allreduce_64B_us_new_group": round(ranks[0]["lat"]["group"] * 1e6, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--backends", default="hccl_go,gloo")
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args()
    tmp = os.environ.get("TMPDIR", "/tmp")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    header = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "split_groups": os.environ.get("HCCL_GO_SPLIT_GROUPS", "default"),
    }
    print(json.dumps(header))
    results = []
    for backend in args.backends.split(","):
        r = measure(backend, args.world, args.groups, tmp)
        results.append(r)
        print(json.dumps(r))
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**header, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
