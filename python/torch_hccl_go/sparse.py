"""Sparse all_reduce: every rank contributes (index, value) pairs, every rank gets the dense sum.

    from torch_hccl_go.sparse import sparse_all_reduce
    dense = sparse_all_reduce(indices, values, size)          # blocks
    fut = sparse_all_reduce(indices, values, size, async_op=True)
    dense = fut.wait()

It runs natively (hcclGoSparseAllReduce) on the group's hccl_go communicator:
the ranks exchange their pair counts, then all-gather the lists (int32 indices
when size <= 2^31) and add them in rank order, unless together they outweigh the
dense tensor (nnz_total * (index + value bytes) > size * value bytes), in which
case each rank adds its own pairs locally and the dense tensors are all-reduced.
Every rank ends with bitwise identical results. Values: float32, float64, int32
or int64; repeated indices add up. Issue calls in the same order on every rank,
like any collective.
"""

from __future__ import annotations

import ctypes
import threading

import torch
import torch.distributed as dist

from . import _compress_capi as capi

_STREAM_DEFAULT = 0  # HCCL_GO_STREAM_DEFAULT, for an extension without per-group streams


def sparse_all_reduce(
    indices: torch.Tensor,
    values: torch.Tensor,
    size: int,
    group: dist.ProcessGroup | None = None,
    *,
    out: torch.Tensor | None = None,
    async_op: bool = False,
) -> torch.Tensor | torch.futures.Future:
    """Sums every rank's pairs into a dense 1-D tensor of `size` elements.

    indices: 1-D integer tensor (any integer dtype; int64 is passed as is);
    values: 1-D tensor of as many elements. out (optional) receives the result and
    is returned; it must be a contiguous CPU tensor of `size` elements of values'
    dtype. With async_op the call returns at once a torch Future of out, completed
    from a helper thread when the op is done; the tensors must not be modified
    until then.
    """
    from .comm import get_backend

    if values.dtype not in capi.SPARSE_DTYPES:
        raise TypeError(f"hccl_go: sparse all_reduce of {values.dtype}: want one of {list(capi.SPARSE_DTYPES)}")
    if indices.dim() != 1 or values.dim() != 1 or indices.numel() != values.numel():
        raise ValueError(
            f"hccl_go: sparse all_reduce needs 1-D indices and values of one length, "
            f"got {tuple(indices.shape)} and {tuple(values.shape)}"
        )
    if indices.device.type != "cpu" or values.device.type != "cpu":
        raise ValueError("hccl_go: sparse all_reduce takes CPU tensors")
    indices = indices.to(torch.int64).contiguous()
    values = values.contiguous()
    if out is None:
        out = torch.empty(size, dtype=values.dtype)
    elif out.dtype != values.dtype or out.numel() != size or not out.is_contiguous() or out.device.type != "cpu":
        raise ValueError(f"hccl_go: out must be a contiguous CPU {values.dtype} tensor of {size} elements")

    backend = get_backend(group)
    comm = backend.comm_handle
    # The stream the group issues its collectives on: the sparse op queues behind them.
    stream = getattr(backend, "stream", _STREAM_DEFAULT)
    nnz = indices.numel()
    work = ctypes.c_uint64(0)
    rc = capi.lib().hcclGoSparseAllReduce(
        indices.data_ptr() if nnz else None,
        values.data_ptr() if nnz else None,
        nnz,
        capi.SPARSE_DTYPES[values.dtype],
        out.data_ptr() if size else None,
        size,
        comm,
        stream,
        ctypes.byref(work),
    )
    capi.check(comm, rc, "hcclGoSparseAllReduce")
    if not async_op:
        capi.wait_work(work.value)
        return out

    fut: torch.futures.Future = torch.futures.Future()

    def finish(keep=(indices, values, out)) -> None:  # keep: the op's memory stays alive
        try:
            capi.wait_work(work.value)
        except BaseException as e:  # noqa: BLE001  (handed to whoever waits on the future)
            fut.set_exception(e)
        else:
            fut.set_result(out)

    threading.Thread(target=finish, name="hccl_go-sparse-wait", daemon=True).start()
    return fut
