"""Times torch_hccl_go.all_reduce beside DeepSpeed's inference_all_reduce, dist.all_reduce
on hccl_go, and dist.all_reduce on a backend that does nothing (torch's own path alone).

    .venv/bin/python bench/direct/allreduce.py [--world 2] [--sizes 8,64,512,4K,32K,256K,2M,16M]
                                             [--dtype float32] [--batches 9] [--batch-ms 20]

One process per rank on this host. The default group is gloo (DeepSpeed's op needs
`deepspeed.init_distributed(dist_backend="gloo")` and LOCAL_SIZE = the world size; it compiles
on first use); hccl_go and the null backend (bench/direct/null_backend.cpp, built on first
use) are groups of the same ranks, so all four run in one job. For each size every mode is
checked once (each rank adds rank + 1: every element must become world*(world+1)/2), then
timed in batches that alternate between the modes, each after a few untimed calls; rank 0
prints the median time per call over the batches, in microseconds. DeepSpeed's op reduces
float32, bfloat16 and float16 with SUM over the world only (other dtypes it leaves
untouched); without DeepSpeed installed (`.venv/bin/pip install deepspeed==0.19.8 ninja`)
its column is left out. Hold `flock /tmp/bench.lock` while it runs.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = Path(__file__).resolve().parent
MODES = ("direct", "deepspeed", "dist", "null")


def parse_size(s: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units else int(s)


def null_backend_module():
    from torch.utils.cpp_extension import load

    return load(name="hccl_go_bench_null_backend", sources=[str(HERE / "null_backend.cpp")], verbose=False)


def has_deepspeed() -> bool:
    try:
        import deepspeed  # noqa: F401
    except ImportError:
        return False
    return True


def rank_main(rank: int, args, port: int, use_ds: bool, out) -> None:
    world = args.world
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank), LOCAL_SIZE=str(world), DS_ACCELERATOR="cpu",
    )
    torch.set_num_threads(1)
    import torch_hccl_go

    null = null_backend_module()
    # Like gloo and hccl_go, it keeps torch's flight-recorder hook away (which records
    # every op of other backends, Python traceback included: about 1-3 us).
    getattr(dist.distributed_c10d, "_FR_SELF_RECORDING_BACKENDS", set()).add("null")
    dist.Backend.register_backend(
        "null", lambda store, r, size, timeout: null.NullBackend(r, size), extended_api=False, devices=["cpu"]
    )
    if use_ds:
        import deepspeed
        import deepspeed.comm as dscomm

        deepspeed.utils.logger.setLevel("WARNING")
        deepspeed.init_distributed(dist_backend="gloo")
    else:
        dist.init_process_group("gloo")
    hg = dist.new_group(backend="hccl_go")
    ng = dist.new_group(backend="null")
    dtype = getattr(torch, args.dtype)
    calls = {
        "direct": lambda t: torch_hccl_go.all_reduce(t, group=hg),
        "dist": lambda t: dist.all_reduce(t, group=hg),
        "null": lambda t: dist.all_reduce(t, group=ng),
    }
    if use_ds:
        calls["deepspeed"] = lambda t: dscomm.inference_all_reduce(t)
    modes = [m for m in MODES if m in calls]
    want = float(world * (world + 1) // 2)
    rows = []
    for size in args.sizes:
        n = max(1, size // dtype.itemsize)
        t = torch.empty(n, dtype=dtype)
        for m in modes:
            if m == "null":
                continue
            t.fill_(rank + 1)
            calls[m](t)
            if not bool((t == want).all()):
                raise AssertionError(f"{m}: {size} B gave {t[:4].tolist()}..., want {want}")
        t.fill_(0)
        # Calls per batch from rank 0's estimate, the same on every rank.
        estimate = torch.zeros(1, dtype=torch.float64)
        f = calls["direct"]
        for _ in range(3):
            f(t)
        t0 = time.perf_counter()
        for _ in range(10):
            f(t)
        estimate[0] = (time.perf_counter() - t0) / 10
        dist.broadcast(estimate, 0)
        iters = max(2, min(20000, int(args.batch_ms * 1e-3 / max(estimate.item(), 1e-7))))
        times = {m: [] for m in modes}
        for b in range(args.batches):
            for k in range(len(modes)):
                m = modes[(b + k) % len(modes)]
                call = calls[m]
                for _ in range(max(3, iters // 10)):  # untimed: back from the other modes
                    call(t)
                t0 = time.perf_counter()
                for _ in range(iters):
                    call(t)
                times[m].append((time.perf_counter() - t0) / iters * 1e6)
        rows.append((size, {m: statistics.median(v) for m, v in times.items()}))
    if rank == 0:
        out.put(rows)
    dist.destroy_process_group()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--sizes", default="8,64,512,4K,32K,256K,2M,16M", help="bytes, comma-separated (K, M suffixes)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--batches", type=int, default=9)
    p.add_argument("--batch-ms", type=float, default=20.0)
    args = p.parse_args()
    args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    null_backend_module()  # build once, before the ranks start
    use_ds = has_deepspeed()
    if not use_ds:
        print("# DeepSpeed is not installed: its column is left out (.venv/bin/pip install deepspeed==0.19.8 ninja)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, args, port, use_ds, out)) for r in range(args.world)]
    for pr in procs:
        pr.start()
    rows = out.get(timeout=3600)
    for pr in procs:
        pr.join(60)
    modes = [m for m in MODES if m in rows[0][1]]
    print(f"# all_reduce, {args.dtype}, world {args.world}: median us per call over {args.batches} batches")
    print("# direct: torch_hccl_go.all_reduce(t, group=g); deepspeed: deepspeed.comm.inference_all_reduce(t);")
    print("# dist: dist.all_reduce(t, group=g) on hccl_go; null: dist.all_reduce on a backend that does nothing")
    head = f"{'size(B)':>10}" + "".join(f"{m:>11}" for m in modes)
    if "deepspeed" in modes:
        head += f"{'ds/direct':>11}"
    print(head)
    for size, med in rows:
        line = f"{size:>10}" + "".join(f"{med[m]:>11.2f}" for m in modes)
        if "deepspeed" in modes:
            line += f"{med['deepspeed'] / med['direct']:>10.2f}x"
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
