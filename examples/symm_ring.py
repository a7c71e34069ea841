"""A ring exchange with symmetric memory: each step, every rank puts a block into the next
rank's buffer, signals it, waits for the previous rank's signal and checks what arrived.

    torchrun --nproc-per-node 2 examples/symm_ring.py --size 1048576 --steps 20

Only ranks of one host share symmetric memory so far (see docs/symm.md).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.distributed as dist
import torch_hccl_go.symm as symm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20, help="float32 elements per block")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    dist.init_process_group(backend="hccl_go")
    rank, world = dist.get_rank(), dist.get_world_size()
    nxt, prv = (rank + 1) % world, (rank - 1) % world

    buf = symm.empty(args.size, dtype=torch.float32)  # every rank, the same size
    h = symm.rendezvous(buf)
    block = torch.empty(args.size, dtype=torch.float32)
    h.barrier()
    start = time.perf_counter()
    for step in range(args.steps):
        block.fill_(rank * 1000 + step)
        h.put(block, nxt)  # straight into the next rank's memory
        h.put_signal(nxt)  # the data is visible to it once it sees this
        h.wait_signal(prv)
        want = prv * 1000 + step
        if not bool((buf == want).all()):
            raise SystemExit(f"rank {rank} step {step}: expected {want}, got {buf[:4].tolist()}")
        h.barrier()  # every rank has read its block: the next step may overwrite it
    elapsed = time.perf_counter() - start
    gbps = args.steps * buf.numel() * buf.element_size() / elapsed / 1e9
    print(f"symm_ring: ok rank {rank}/{world}: {args.steps} steps of {args.size * 4} bytes, {gbps:.2f} GB/s per rank")
    del h, buf
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
