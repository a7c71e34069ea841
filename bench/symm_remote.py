"""One-sided put and get to a rank of another host (torch_hccl_go.symm), against a matched
dist.send / dist.recv of the same bytes over the same links.

    HCCL_GO_HOST_ID=... torchrun --nproc-per-node 2 bench/symm_remote.py [--sizes 4KiB,1MiB,16MiB]
        [--iters 20] [--json out.json]

Rank r takes the host id "bench-host-r" unless HCCL_GO_HOST_ID is set, so that two ranks on one
machine talk as two hosts do: over TCP (here loopback). Per size, rank 0 times `put` into rank
1's buffer followed by `put_signal` (rank 1 waits for the signal), `get` of rank 1's buffer,
and `dist.send` to rank 1 (which receives); rank 0 prints the medians and the bandwidth.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime

import torch
import torch.distributed as dist
from torch_hccl_go.bench.sizes import format_size, parse_sizes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/symm_remote.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="4KiB,1MiB,16MiB", help="bytes per transfer")
    p.add_argument("--iters", type=int, default=20, help="timed transfers per size (after 2 untimed)")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    os.environ.setdefault("HCCL_GO_HOST_ID", f"bench-host-{rank}")
    import torch_hccl_go.symm as symm  # after the host id is set

    dist.init_process_group("hccl_go")
    if dist.get_world_size() != 2:
        raise SystemExit("bench/symm_remote.py runs on 2 ranks")
    rows = []
    for size in parse_sizes(args.sizes):
        n = size // 4
        t = symm.empty(n)
        h = symm.rendezvous(t)
        src, dst = torch.ones(n), torch.empty(n)
        times: dict[str, list[float]] = {"put+signal": [], "get": [], "send/recv": []}
        for i in range(args.iters + 2):
            h.barrier()
            if rank == 0:
                t0 = time.perf_counter()
                h.put(src, 1)
                h.put_signal(1)
                put = time.perf_counter() - t0
                t0 = time.perf_counter()
                h.get(dst, 1)
                get = time.perf_counter() - t0
            else:
                h.wait_signal(0)
            dist.barrier()
            if rank == 0:
                t0 = time.perf_counter()
                dist.send(src, 1)
                sendrecv = time.perf_counter() - t0
            else:
                dist.recv(dst, 0)
            dist.barrier()  # the send is complete on both sides
            if rank == 0 and i >= 2:
                times["put+signal"].append(put)
                times["get"].append(get)
                times["send/recv"].append(sendrecv)
        if rank == 0:
            row = {"size": size}
            for kind, v in times.items():
                med = statistics.median(v)
                row[kind] = {"time_s": med, "gbps": size / med / 1e9}
            rows.append(row)
        del h, t
    if rank == 0:
        print(
            f"# one-sided transfers to a rank of another host ({os.environ['HCCL_GO_HOST_ID']}), median of {args.iters}"
        )
        print(f"{'size':>8} {'put+signal us':>14} {'GB/s':>6} {'get us':>9} {'GB/s':>6} {'send us':>9} {'GB/s':>6}")
        for row in rows:
            cells = " ".join(
                f"{row[k]['time_s'] * 1e6:{w}.1f} {row[k]['gbps']:6.2f}"
                for k, w in (("put+signal", 14), ("get", 9), ("send/recv", 9))
            )
            print(f"{format_size(row['size']):>8} {cells}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"date": datetime.now(UTC).isoformat(), "rows": rows}, f, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
