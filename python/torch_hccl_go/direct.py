"""torch_hccl_go.all_reduce: an in-place, synchronous all_reduce that skips c10d's dispatch.

    torch_hccl_go.all_reduce(t)                                   # SUM over the default group
    torch_hccl_go.all_reduce(t, op=dist.ReduceOp.MAX, group=tp_group)

For latency-bound callers (tensor-parallel inference), in the manner of DeepSpeed's
`deepspeed.comm.inference_all_reduce`, but for every dtype and reduce op of
`dist.all_reduce` (PREMUL_SUM from `dist._make_nccl_premul_sum(factor)`) and on any group
whose CPU backend is hccl_go. It returns once every rank has the result in `tensor` (a
contiguous CPU tensor); errors are raised at once, like those of `dist.all_reduce(t)`.
Small tensors take the library's fast lane (the reduction runs in shared memory without
entering its Go runtime); large ones the same path as `dist.all_reduce`.

Under torch.compile it is the custom op `torch.ops.hccl_go.all_reduce_(tensor, reduce_op,
premul_factor, group_name)`, which the graph keeps; eagerly, one call into the extension.
torch.compile cannot read a ReduceOp object, so there `op` must be a dist.ReduceOp.<NAME>
(PREMUL_SUM is eager only; the custom op itself takes its factor).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _world

from . import _C

_eager = _C.all_reduce_


def all_reduce(tensor: torch.Tensor, op=dist.ReduceOp.SUM, group: dist.ProcessGroup | None = None) -> None:
    """Reduces `tensor` in place across the ranks of `group` (default: the world) with `op`."""
    if torch.compiler.is_compiling():
        _all_reduce_op(tensor, op, group)
        return
    if group is None:
        group = _world.default_pg
    try:
        _eager(tensor, op, group)
    except TypeError as e:
        _explain(tensor, op, group, e)
        raise


def _all_reduce_op(tensor: torch.Tensor, op, group: dist.ProcessGroup | None) -> None:
    """The custom op's form: the group by name, the reduce op by number."""
    if group is None:
        group = dist.group.WORLD
    if not isinstance(op, dist.ReduceOp.RedOpType):
        # A ReduceOp object (PREMUL_SUM's carries its factor): torch.compile cannot read it
        # (every read of its op makes a new object, which fails dynamo's guard at once).
        raise NotImplementedError(
            "torch_hccl_go.all_reduce under torch.compile takes a dist.ReduceOp.<NAME> "
            "(SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR); for PREMUL_SUM scale the tensor and use SUM"
        )
    torch.ops.hccl_go.all_reduce_(tensor, int(op), 1.0, group.group_name)


def _explain(tensor, op, group, err: TypeError) -> None:
    """Turns the extension's argument mismatch into an error that says which argument."""
    if group is None:
        raise ValueError("torch_hccl_go.all_reduce: the default process group is not initialized") from err
    if not isinstance(group, dist.ProcessGroup):
        raise TypeError(
            f"torch_hccl_go.all_reduce: group must be a ProcessGroup, got {type(group).__name__} "
            "(new_group returns a placeholder on ranks that are not members)"
        ) from err
    if not isinstance(tensor, torch.Tensor):
        got = type(tensor).__name__
        raise TypeError(f"torch_hccl_go.all_reduce: tensor must be a torch.Tensor, got {got}") from err
    if not isinstance(op, (dist.ReduceOp, dist.ReduceOp.RedOpType)):
        raise TypeError(f"torch_hccl_go.all_reduce: op must be a torch.distributed.ReduceOp, got {op!r}") from err
