"""Time one all_reduce size with and without wire compression, on one rank of a job.

Run one process per rank (examples/compression_netns.sh starts them in network
namespaces joined by a rate-limited link); they meet through a FileStore:

    python examples/compression_link_bench.py --rank R --world 2 --store /tmp/dir/store \
        [--mib 64] [--iters 5] [--modes none,fp16,bf16]

Every mode gets its own process group (torch_hccl_go.Options(compression=...)); the
modes alternate iteration by iteration so that load changes hit them alike. Rank 0
prints one line per mode: median, min and max seconds, algorithm bandwidth, the
bytes rank 0 sent per all_reduce (torch_hccl_go.stats), the speed-up over none, and
the worst deviation from the exact sum relative to the documented bound.
"""

import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist

UNIT_ROUNDOFF = {"none": 0.0, "fp16": 2.0**-11, "bf16": 2.0**-8}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--store", required=True, help="FileStore path shared by the ranks")
    p.add_argument("--mib", type=float, default=64, help="all_reduce size in MiB of float32")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--modes", default="none,fp16,bf16")
    args = p.parse_args()

    import torch_hccl_go
    from torch_hccl_go.stats import delta, stats

    torch.set_num_threads(1)
    store = dist.FileStore(args.store, args.world)
    dist.init_process_group("hccl_go", store=store, rank=args.rank, world_size=args.world)
    modes = args.modes.split(",")
    groups = {m: dist.new_group(backend="hccl_go", pg_options=torch_hccl_go.Options(compression=m)) for m in modes}
    n = int(args.mib * (1 << 20)) // 4
    inputs = [torch.randn(n, generator=torch.Generator().manual_seed(r)) * 1e-2 for r in range(args.world)]
    exact = torch.stack([x.double() for x in inputs]).sum(0)
    magnitude = torch.stack([x.double().abs() for x in inputs]).sum(0)
    mine = inputs[args.rank]
    buf = torch.empty_like(mine)

    times = {m: [] for m in modes}
    sent = {}
    worst = {}
    for it in range(args.iters + 1):  # the first round warms up
        for m in modes:
            buf.copy_(mine)
            before = stats(groups[m])
            dist.barrier(group=groups[m])
            t0 = time.perf_counter()
            dist.all_reduce(buf, group=groups[m])
            elapsed = time.perf_counter() - t0
            if it == 0:
                sent[m] = delta(before, stats(groups[m]))["ops"]["allreduce"]["bytes_sent"]
                bound = args.world * UNIT_ROUNDOFF[m] * magnitude + 4 * 2.0**-24 * magnitude + 1e-30
                worst[m] = ((buf.double() - exact).abs() / bound).max().item()
            else:
                times[m].append(elapsed)

    if args.rank == 0:
        base = statistics.median(times[modes[0]])
        print(f"all_reduce of {args.mib:g} MiB float32, {args.world} ranks, {args.iters} timed iterations per mode")
        for m in modes:
            med = statistics.median(times[m])
            print(
                f"  {m:5s} median {med:.3f} s (min {min(times[m]):.3f}, max {max(times[m]):.3f})  "
                f"algbw {n * 4 / med / 1e9:.3f} GB/s  sent {sent[m] / 2**20:.1f} MiB  "
                f"speed-up vs {modes[0]} {base / med:.2f}x  error/bound {worst[m]:.2f}"
            )
        sys.stdout.flush()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
