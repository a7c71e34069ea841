"""nccl-tests style benchmark of torch.distributed collectives on CPU tensors.

    python -m torch_hccl_go.bench                                  # all_reduce, 8B..512MiB, hccl_go vs gloo
    python -m torch_hccl_go.bench --ops all --sizes 8B:64MiB:4 --json out.json --plot out.png
    torchrun --nproc-per-node 4 -m torch_hccl_go.bench --backends hccl_go,gloo
    python -m torch_hccl_go.bench --jobs 20 --sizes 8,64K,1M --peers deepspeed,mpi
    python -m torch_hccl_go.bench --history --sizes 8,64K,1M

Every backend runs in the same processes (one process group each), sizes in turn, the
backends' batches interleaved; each result is checked once against a reference. --jobs
and --peers instead run a series of fresh jobs (orchestrate.py) and report over all of
them; --history adds single ops after pauses (history.py). See bench/README.md and
`python -m torch_hccl_go.bench --help`.
"""

from .cli import main

__all__ = ["main"]
