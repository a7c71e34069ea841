"""Access to the communicator behind a process group."""

from __future__ import annotations

import json

import torch
import torch.distributed as dist

from . import _C


def get_backend(group: dist.ProcessGroup | None = None) -> _C.HcclGoBackend:
    """The hccl_go backend serving CPU tensors in group (default: the world)."""
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    backend = group._get_backend(torch.device("cpu"))
    # TORCH_DISTRIBUTED_DEBUG=DETAIL wraps backends for consistency checks.
    backend = getattr(backend, "wrapped_pg", backend)
    if not isinstance(backend, _C.HcclGoBackend):
        raise ValueError(f"this process group serves CPU tensors with {type(backend).__name__}, not hccl_go")
    return backend


def comm_info(group: dist.ProcessGroup | None = None) -> dict:
    """hcclGoCommInfo of the group's communicator, parsed from its JSON."""
    return json.loads(get_backend(group).comm_info())
