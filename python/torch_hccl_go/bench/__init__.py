"""nccl-tests style benchmark of torch.distributed collectives on CPU tensors.

    python -m torch_hccl_go.bench                                  # all_reduce, 8B..512MiB, hccl_go vs gloo
    python -m torch_hccl_go.bench --ops all --sizes 8B:64MiB:4 --json out.json --plot out.png
    torchrun --nproc-per-node 4 -m torch_hccl_go.bench --backends hccl_go,gloo

Every backend runs in the same processes (one process group each), sizes in turn, the
backends' batches interleaved; each result is checked once against a reference. See
`python -m torch_hccl_go.bench --help`.
"""

from .cli import main

__all__ = ["main"]
