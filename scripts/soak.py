#!/usr/bin/env python3
"""Soak test of the hccl_go backend: many random collectives, every result checked.

    .venv/bin/python scripts/soak.py                      # 100,000 ops at world 4 (the acceptance run)
    .venv/bin/python scripts/soak.py --ops 5000 --seed 7  # shorter
    .venv/bin/python scripts/soak.py --backend gloo       # the same ops on gloo, for comparison

Each op picks, from one random stream shared by all ranks: a group (the world or
any subgroup of 2 or more ranks, each an hccl_go communicator), a collective
(all_reduce with every reduce op, broadcast, reduce, all_gather_into_tensor,
reduce_scatter_tensor, all_to_all_single, barrier), a dtype (float32, float64,
float16, bfloat16, int8, uint8, int32, int64) and a size (log-uniform, 1 element
to 4 MiB). Inputs are small integers computed from (op number, rank), so every
rank computes the exact expected result itself and compares bit for bit.
Prints progress, the count of wrong results (must be 0) and the first few
mismatches; exits 1 if any. Not part of CI (minutes to hours).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import os
import queue
import random
import sys
import tempfile
import time
import traceback
from datetime import timedelta

MAX_BYTES = 4 << 20
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64"]
FLOAT_OPS = ["sum", "prod", "max", "min", "avg", "premul_sum"]
INT_OPS = ["sum", "prod", "max", "min", "band", "bor", "bxor"]
KINDS = ["all_reduce"] * 4 + ["broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier"]


def plan(rng: random.Random, world: int, groups: list[tuple[int, ...]]) -> dict:
    """The next op, identical on every rank."""
    members = rng.choice(groups)
    kind = rng.choice(KINDS)
    dtype = rng.choice(DTYPES)
    ops = FLOAT_OPS if dtype.startswith(("float", "bfloat")) else INT_OPS
    if kind == "reduce_scatter":
        ops = [o for o in ops if o not in ("band", "bor", "bxor", "premul_sum")]
    op = rng.choice(ops)
    size = 1 << rng.randrange(0, 23)  # bytes, log-uniform up to 4 MiB
    return {"members": members, "kind": kind, "dtype": dtype, "op": op, "nbytes": size, "root": rng.choice(members)}


def make_input(torch, n: int, dtype, op: str, it: int, rank: int):
    """Small integers, exact in every dtype after any reduction of <= 8 ranks."""
    # Element i depends on i only through i % 8: build one period and tile it
    # (a copy), not n int64 products and remainders (30x slower at 4 MiB).
    base = (torch.arange(8, dtype=torch.int64) * (rank * 7 + 3) + it * 13) % 8
    if op == "prod":
        base = base % 2 + 1
    return base.to(dtype).repeat((n + 7) // 8)[:n]


def reduce_ref(torch, xs, op: str, p: int):
    acc = xs[0].clone()
    for x in xs[1:]:
        if op in ("sum", "avg", "premul_sum"):
            acc = acc + x
        elif op == "prod":
            acc = acc * x
        elif op == "max":
            acc = torch.maximum(acc, x)
        elif op == "min":
            acc = torch.minimum(acc, x)
        elif op == "band":
            acc = acc & x
        elif op == "bor":
            acc = acc | x
        elif op == "bxor":
            acc = acc ^ x
    if op == "avg":
        acc = acc / p
    if op == "premul_sum":
        acc = acc * 0.5
    return acc.to(xs[0].dtype)


def torch_op(dist, op: str):
    if op == "premul_sum":
        return dist._make_nccl_premul_sum(0.5)
    return {
        "sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
        "avg": dist.ReduceOp.AVG, "band": dist.ReduceOp.BAND, "bor": dist.ReduceOp.BOR, "bxor": dist.ReduceOp.BXOR,
    }[op]


def run_op(torch, dist, spec: dict, it: int, rank: int, group) -> str | None:
    """Runs one op on this rank; returns a description of a wrong result, or None."""
    members = spec["members"]
    p, me = len(members), members.index(rank)
    dtype = getattr(torch, spec["dtype"])
    elem = torch.empty(0, dtype=dtype).element_size()
    n = max(1, spec["nbytes"] // elem)
    kind, op = spec["kind"], spec["op"]
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        n = max(1, n // p)

    def inp(r, count=n):
        return make_input(torch, count, dtype, op, it, r)

    if kind == "all_reduce":
        t = inp(rank)
        dist.all_reduce(t, op=torch_op(dist, op), group=group)
        want = reduce_ref(torch, [inp(r) for r in members], op, p)
    elif kind == "broadcast":
        t = inp(rank) if rank == spec["root"] else torch.zeros(n, dtype=dtype)
        dist.broadcast(t, src=spec["root"], group=group)
        want = inp(spec["root"])
    elif kind == "reduce":
        if op == "premul_sum":
            op = "sum"
        t = inp(rank)
        dist.reduce(t, dst=spec["root"], op=torch_op(dist, op), group=group)
        if rank != spec["root"]:
            return None
        want = reduce_ref(torch, [inp(r) for r in members], op, p)
    elif kind == "all_gather":
        t = torch.zeros(n * p, dtype=dtype)
        dist.all_gather_into_tensor(t, inp(rank), group=group)
        want = torch.cat([inp(r) for r in members])
    elif kind == "reduce_scatter":
        t = torch.zeros(n, dtype=dtype)
        dist.reduce_scatter_tensor(t, inp(rank, n * p), op=torch_op(dist, op), group=group)
        want = reduce_ref(torch, [inp(r, n * p) for r in members], op, p)[me * n : (me + 1) * n]
    elif kind == "all_to_all":
        t = torch.zeros(n * p, dtype=dtype)
        dist.all_to_all_single(t, inp(rank, n * p), group=group)
        want = torch.cat([inp(r, n * p)[me * n : (me + 1) * n] for r in members])
    else:
        dist.barrier(group=group)
        return None
    if torch.equal(t, want):
        return None
    bad = (t != want).nonzero()
    i = int(bad[0]) if len(bad) else -1
    return (
        f"op {it}: {kind} {op} {spec['dtype']} x{n} on ranks {list(members)} (root {spec['root']}): "
        f"{len(bad)} wrong elements, first at {i}: got {t[i].item()}, want {want[i].item()}"
    )


def rank_main(rank: int, world: int, args, store_dir: str, q) -> None:
    try:
        import torch
        import torch.distributed as dist

        if args.backend == "hccl_go":
            import torch_hccl_go  # noqa: F401
        torch.set_num_threads(1)
        store = dist.FileStore(os.path.join(store_dir, "store"), world)
        timeout = timedelta(seconds=args.timeout)
        dist.init_process_group(args.backend, store=store, rank=rank, world_size=world, timeout=timeout)
        groups = [c for k in range(2, world + 1) for c in itertools.combinations(range(world), k)]
        handles = {}
        for g in groups:  # every rank creates every group, in the same order
            handles[g] = None if len(g) == world else dist.new_group(list(g), timeout=timeout)
        rng = random.Random(args.seed)
        wrong: list[str] = []
        ran = 0
        start = last = time.time()
        for it in range(args.ops):
            spec = plan(rng, world, groups)
            if rank in spec["members"]:
                bad = run_op(torch, dist, spec, it, rank, handles[spec["members"]])
                ran += 1
                if bad:
                    wrong.append(bad)
            if rank == 0 and time.time() - last > args.progress:
                last = time.time()
                took = time.time() - start
                print(f"soak: {it + 1}/{args.ops} ops, {took:.0f} s, wrong so far on rank 0: {len(wrong)}",
                      flush=True)
        dist.barrier()
        q.put((rank, ran, len(wrong), wrong[:5], time.time() - start, None))
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001
        q.put((rank, 0, 0, [], 0.0, traceback.format_exc()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=100_000, help="number of collectives (default 100000)")
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", default="hccl_go")
    parser.add_argument("--timeout", type=float, default=300, help="process group timeout, s")
    parser.add_argument("--progress", type=float, default=30, help="seconds between progress lines")
    args = parser.parse_args()

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    store_dir = tempfile.mkdtemp(prefix="hccl_go_soak_")
    procs = [ctx.Process(target=rank_main, args=(r, args.world, args, store_dir, q)) for r in range(args.world)]
    for p in procs:
        p.start()
    reports = {}
    gone_since = None
    while len(reports) < args.world:
        # A long soak reports only at the end: wait as long as every rank
        # lives (each fails by itself at the process group timeout if stuck).
        try:
            r = q.get(timeout=5)
        except queue.Empty:
            gone = [i for i, p in enumerate(procs) if not p.is_alive() and i not in reports]
            if gone:
                gone_since = gone_since or time.time()
                if time.time() - gone_since > 60:
                    print(f"soak: rank(s) {gone} exited without a report", file=sys.stderr)
                    break
            continue
        reports[r[0]] = r
        if r[5]:
            print(f"soak: rank {r[0]} failed:\n{r[5]}", file=sys.stderr)
            break
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
    if len(reports) < args.world or any(r[5] for r in reports.values()):
        return 2
    total_wrong = sum(r[2] for r in reports.values())
    elapsed = max(r[4] for r in reports.values())
    ops_run = {r: rep[1] for r, rep in sorted(reports.items())}
    print(f"soak: {args.ops} ops (seed {args.seed}, world {args.world}, backend {args.backend}) in {elapsed:.0f} s; "
          f"ops run per rank {ops_run}; wrong results: {total_wrong}")
    for r, rep in sorted(reports.items()):
        for line in rep[3]:
            print(f"  rank {r}: {line}")
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
