"""One rank of a scale run through torch.distributed (scripts/scale.sh N --torch).

    torchrun --nproc-per-node N bench/scale/torch_rank.py DIR [--per-host K]

The torch counterpart of scale_rank.c, writing the same record to DIR/rank-RANK.json
(bench/scale/report.py prints the table): init_process_group with backend hccl_go (timed),
every collective at counts 0, 1, 7 and 1031 checked element by element on integer-valued
float32 data (all_reduce sum and max, broadcast, reduce, all_gather and
all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single, gather, scatter, a
send/recv ring, barrier), two groups from new_group (even and odd ranks) with every
collective checked on each, an 8-byte all_reduce timed, and the rank's sockets, threads
and memory before init (torch and torch_hccl_go imported), after init, after the groups
and at the end. With --per-host K, rank r says it is on host r // K (HCCL_GO_HOST_ID).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch_hccl_go  # noqa: F401  (registers the backend)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_usage import usage  # noqa: E402

COUNTS = (0, 1, 7, 1031)


def val(rank: int, n: int, offset: int = 0) -> torch.Tensor:
    """What rank contributes at elements offset..offset+n: small integers (exact sums)."""
    i = torch.arange(offset, offset + n, dtype=torch.int64)
    return ((rank * 7 + (i % 1000) * 3) % 11 + 1).to(torch.float32)


class Checker:
    def __init__(self):
        self.checks = 0
        self.failures: list[str] = []

    def expect(self, op: str, count: int, got: torch.Tensor, want: torch.Tensor) -> None:
        self.checks += want.numel()
        if not torch.equal(got, want):
            bad = (got != want).nonzero()
            i = int(bad[0]) if len(bad) else -1
            msg = f"{op} count {count}: {bad.numel()} elements differ"
            if i >= 0:
                msg += f", first {i}: {got.flatten()[i].item()} want {want.flatten()[i].item()}"
            self.failures.append(msg)


def collectives(c: Checker, group, me: int, ranks: list[int], count: int, prefix: str) -> None:
    """Every collective on group (this rank is me; ranks are its members' global ranks)."""
    n = len(ranks)
    g = group

    def gr(i: int) -> int:  # group rank -> global rank (for torch's root arguments)
        return ranks[i]

    a = val(me, count)
    total = sum(val(r, count) for r in range(n)) if n else a
    t = a.clone()
    dist.all_reduce(t, group=g)
    c.expect(prefix + "all_reduce sum", count, t, total)
    t = a.clone()
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g)
    c.expect(prefix + "all_reduce max", count, t, torch.stack([val(r, count) for r in range(n)]).amax(0))

    t = a.clone()
    dist.broadcast(t, src=gr(n - 1), group=g)
    c.expect(prefix + "broadcast", count, t, val(n - 1, count))

    t = a.clone()
    dist.reduce(t, dst=gr(0), group=g)
    if me == 0:
        c.expect(prefix + "reduce", count, t, total)

    out = [torch.empty(count) for _ in range(n)]
    dist.all_gather(out, a, group=g)
    c.expect(prefix + "all_gather", count, torch.cat(out), torch.cat([val(r, count) for r in range(n)]))
    flat = torch.empty(n * count)
    dist.all_gather_into_tensor(flat, a, group=g)
    c.expect(prefix + "all_gather_into_tensor", count, flat, torch.cat([val(r, count) for r in range(n)]))

    src = val(me, n * count)
    t = torch.empty(count)
    dist.reduce_scatter_tensor(t, src, group=g)
    c.expect(prefix + "reduce_scatter_tensor", count, t, sum(val(r, count, me * count) for r in range(n)))

    t = torch.empty(n * count)
    dist.all_to_all_single(t, src, group=g)
    c.expect(prefix + "all_to_all_single", count, t, torch.cat([val(r, count, me * count) for r in range(n)]))

    groot = 1 % n
    out = [torch.empty(count) for _ in range(n)] if me == groot else None
    dist.gather(a, out, dst=gr(groot), group=g)
    if me == groot:
        c.expect(prefix + "gather", count, torch.cat(out), torch.cat([val(r, count) for r in range(n)]))
    t = torch.empty(count)
    pieces = None
    if me == 0:
        pieces = list(val(0, n * count).split(count)) if count else [torch.empty(0) for _ in range(n)]
    dist.scatter(t, pieces, src=gr(0), group=g)
    c.expect(prefix + "scatter", count, t, val(0, count, me * count))

    if n > 1:
        t = torch.empty(count)
        ops = [
            dist.P2POp(dist.irecv, t, gr((me + n - 1) % n), group=g),
            dist.P2POp(dist.isend, a, gr((me + 1) % n), group=g),
        ]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        c.expect(prefix + "send/recv ring", count, t, val((me + n - 1) % n, count))
    dist.barrier(group=g)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--per-host", type=int, default=0)
    args = ap.parse_args()
    t_start = time.time()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    per_host = args.per_host or world
    os.environ["HCCL_GO_HOST_ID"] = f"scale-host-{rank // per_host}"
    torch.set_num_threads(1)
    before = usage()

    t_addrs = time.time()
    dist.init_process_group("hccl_go")
    t = torch.ones(1)
    dist.all_reduce(t)  # the communicator is made on the first op where it is lazy
    t_init = time.time()
    after_init = usage()

    c = Checker()
    everyone = list(range(world))
    for count in COUNTS:
        collectives(c, None, rank, everyone, count, "")
    t_checked = time.time()

    t0 = time.time()
    halves = [list(range(0, world, 2)), list(range(1, world, 2))]
    groups = [dist.new_group(h) for h in halves]  # every rank makes both, as torch requires
    mine = halves[rank % 2]
    collectives(c, groups[rank % 2], mine.index(rank), mine, 7, "group ")
    split_s = time.time() - t0
    after_split = usage()

    x = torch.ones(2)
    for _ in range(5):
        dist.all_reduce(x)
    batches = []
    for _ in range(9):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(10):
            dist.all_reduce(x)
        batches.append((time.perf_counter() - t0) / 10)
    end = usage()

    record = {
        "rank": rank, "nranks": world, "ranks_per_host": per_host, "api": "torch",
        "t_start": t_start, "t_addrs": t_addrs, "t_init": t_init, "t_checked": t_checked,
        "split_s": split_s, "small_all_reduce_us": statistics.median(batches) * 1e6,
        "checks": c.checks, "failed": len(c.failures), "failures": "; ".join(c.failures[:8]),
        "before": before, "after_init": after_init, "after_split": after_split, "end": end,
    }  # fmt: skip
    tmp = os.path.join(args.dir, f"rank-{rank}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, os.path.join(args.dir, f"rank-{rank}.json"))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
