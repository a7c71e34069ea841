"""DDP communication hooks that send only the large gradients, with error feedback.

    from torch_hccl_go.hooks import TopKState, topk_hook, ThresholdState, threshold_hook
    model = DDP(model)
    model.register_comm_hook(TopKState(ratio=0.01), topk_hook)          # 1% largest per bucket
    model.register_comm_hook(ThresholdState(threshold=1e-3), threshold_hook)  # |g| > 1e-3

Each step, per gradient bucket: g = bucket gradient + residual (what earlier
steps did not send); the selected elements of g are exchanged as (index, value)
pairs with the native sparse all_reduce (torch_hccl_go.sparse), the rest stays
in the residual for the next step (error feedback: nothing is dropped, only
delayed). The hook's future holds the dense average (sum / world size), as
DDP's default hook does. Whether the exchange runs as pairs or, once the ranks'
selections together outweigh the dense bucket, as a dense all_reduce, the
library decides (see sparse.py).

Buckets of other dtypes than float32/float64 are all-reduced densely. On a
group not served by hccl_go (gloo, for comparison), or with native=False, the
selected values are scattered into a dense tensor and all-reduced: the same
result, without the byte savings.
"""

# No `from __future__ import annotations` here: DDP checks the hooks' annotations
# (bucket: dist.GradBucket, return: torch.futures.Future[torch.Tensor]) as objects.

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from .sparse import sparse_all_reduce

_SPARSE_FLOATS = (torch.float32, torch.float64)


@dataclass
class _ErrorFeedback:
    """What the sparse hooks share: the group, the residual per bucket, and counts."""

    process_group: dist.ProcessGroup | None = None
    # None: the native sparse all_reduce when the group is served by hccl_go;
    # False: a dense all_reduce of the sparsified bucket (same numbers, all bytes).
    native: bool | None = None
    residuals: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    # Elements selected and elements seen, over all steps and buckets.
    selected: int = 0
    seen: int = 0

    def sparsify(self, key: int, grad: torch.Tensor, select: Callable[[torch.Tensor], torch.Tensor]):
        """Adds bucket key's residual to grad, picks the elements to send with
        select (a function of the compensated gradient returning int64 indices),
        keeps the rest as the new residual, and returns (indices, values).
        Invariant: sum of values sent over steps + residual = sum of grads."""
        flat = grad.reshape(-1)
        residual = self.residuals.get(key)
        if residual is None or residual.shape != flat.shape or residual.dtype != flat.dtype:
            residual = torch.zeros_like(flat)  # first step, or DDP rebuilt its buckets
        compensated = residual.add_(flat)  # the residual buffer becomes g + residual
        indices = select(compensated)
        values = compensated[indices]
        compensated[indices] = 0
        self.residuals[key] = compensated
        self.selected += indices.numel()
        self.seen += flat.numel()
        return indices, values

    def density(self) -> float:
        """Fraction of gradient elements sent so far."""
        return self.selected / self.seen if self.seen else 0.0

    def _use_native(self) -> bool:
        if self.native is not None:
            return self.native
        from .comm import get_backend

        try:
            get_backend(self.process_group)
        except ValueError:
            return False
        return True


@dataclass
class ThresholdState(_ErrorFeedback):
    """State of threshold_hook: elements with |g + residual| > threshold are sent."""

    threshold: float = 1e-3


@dataclass
class TopKState(_ErrorFeedback):
    """State of topk_hook: the ceil(ratio * n) largest |g + residual| of each bucket are sent."""

    ratio: float = 0.01

    def __post_init__(self) -> None:
        if not 0 < self.ratio <= 1:
            raise ValueError(f"TopKState: ratio must be in (0, 1], got {self.ratio}")


def threshold_hook(state: ThresholdState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: exchange the elements above state.threshold in magnitude."""

    def select(g: torch.Tensor) -> torch.Tensor:
        return (g.abs() > state.threshold).nonzero().reshape(-1)

    return _sparse_hook(state, bucket, select)


def topk_hook(state: TopKState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP comm hook: exchange the state.ratio largest elements in magnitude."""

    def select(g: torch.Tensor) -> torch.Tensor:
        k = min(g.numel(), max(1, math.ceil(state.ratio * g.numel())))
        return torch.topk(g.abs(), k, sorted=False).indices

    return _sparse_hook(state, bucket, select)


def _sparse_hook(state: _ErrorFeedback, bucket: dist.GradBucket, select) -> torch.futures.Future[torch.Tensor]:
    buf = bucket.buffer()
    group = state.process_group
    world = dist.get_world_size(group)
    if buf.dtype not in _SPARSE_FLOATS or buf.device.type != "cpu":
        fut = dist.all_reduce(buf.div_(world), group=group, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    indices, values = state.sparsify(bucket.index(), buf, select)
    flat = buf.reshape(-1)
    if state._use_native():
        fut = sparse_all_reduce(indices, values, flat.numel(), group, out=flat, async_op=True)
        return fut.then(lambda f: f.value().div_(world).reshape(buf.shape))

    flat.zero_()
    flat[indices] = values
    fut = dist.all_reduce(flat, group=group, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0].div_(world).reshape(buf.shape))
