"""Symmetric memory for CPU tensors, in the shape of torch.distributed._symmetric_memory.

    import torch_hccl_go.symm as symm

    t = symm.empty(1024, dtype=torch.float32)    # collective: every rank of the group, same size
    h = symm.rendezvous(t)                       # a handle on the peers' buffers
    peer = h.get_buffer((h.rank + 1) % h.world_size, (1024,), torch.float32)
    peer[:4] = 1.0                               # stores go straight to the peer's memory
    h.put(src, dst_rank=1, offset=0)             # or copy in ...
    h.put_signal(1)                              # ... and tell rank 1
    h.wait_signal(0)                             # (on rank 1) wait for rank 0's signal

`empty` returns an ordinary CPU tensor whose storage is a shared-memory segment that
the group's ranks on this host map (all ranks of a host, not a copy). Collectives on such
tensors read the peers' memory in place: all_reduce and broadcast from 256 KiB,
all_gather_into_tensor from 1 MiB of output, reduce_scatter_tensor from 1 MiB of input.
`allocating()` makes torch allocate large tensors that way, and `DistributedDataParallel`
uses it for DDP's gradient buckets:

    model = symm.DistributedDataParallel(model)   # buckets in symmetric memory

Only ranks of one host share memory: get_buffer naming a rank on another host raises
NotImplementedError naming it, while put, get, put_signal, wait_signal and barrier reach
ranks of other hosts over the group's links (the target's application takes no part). See
docs/symm.md for the lifetime, ordering and fork rules.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import threading
import weakref
from collections.abc import Iterator, Sequence
from datetime import timedelta

import torch
import torch.distributed as dist

__all__ = ["DistributedDataParallel", "SymmetricMemoryHandle", "allocating", "empty", "rendezvous"]

# hcclGoDataType_t values (include/hccl_go.h).
_DTYPES = {
    torch.int8: 0,
    torch.uint8: 1,
    torch.int32: 2,
    torch.int64: 4,
    torch.float16: 6,
    torch.float32: 7,
    torch.float64: 8,
    torch.bfloat16: 9,
    torch.bool: 10,
    torch.int16: 11,
}
for _name, _code in (("uint32", 3), ("uint64", 5), ("uint16", 12)):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _code

# hcclGoResult_t values that map to Python's own exceptions.
_INVALID_ARGUMENT, _TIMEOUT, _NOT_SUPPORTED = 1, 5, 9


class SymmError(RuntimeError):
    """A symmetric-memory call failed in the library; `result` is its hcclGoResult_t."""

    def __init__(self, message: str, result: int) -> None:
        super().__init__(message)
        self.result = result


class SymmTimeoutError(SymmError, TimeoutError):
    """A wait ran out of time while the peer lived."""


@functools.cache
def _lib() -> ctypes.CDLL:
    from ._library import library_path

    u64, size, i32, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p
    cdll = ctypes.CDLL(library_path())  # the extension's handle: one Go runtime
    signatures = {
        "hcclGoMemAlloc": [u64, size, ctypes.POINTER(vp)],
        "hcclGoMemFree": [vp],
        "hcclGoWindowCreate": [u64, vp, ctypes.POINTER(u64)],
        "hcclGoWindowDestroy": [u64],
        "hcclGoWindowPeerPtr": [u64, i32, ctypes.POINTER(vp), ctypes.POINTER(size)],
        "hcclGoPut": [vp, size, i32, i32, size, u64],
        "hcclGoGet": [vp, size, i32, i32, size, u64],
        "hcclGoSignal": [u64, i32],
        "hcclGoWaitSignal": [u64, i32, ctypes.c_int64],
        "hcclGoWindowBarrier": [u64, ctypes.c_int64],
        "hcclGoGetLastError": [u64, ctypes.c_char_p, size],
    }
    for name, args in signatures.items():
        fn = getattr(cdll, name)
        fn.argtypes = args
        fn.restype = i32
    return cdll


def _check(rc: int, what: str) -> None:
    if rc == 0:
        return
    buf = ctypes.create_string_buffer(2048)
    _lib().hcclGoGetLastError(0, buf, len(buf))
    msg = f"hccl_go symm {what}: {buf.value.decode(errors='replace')}"
    if rc == _INVALID_ARGUMENT:
        raise ValueError(msg)
    if rc == _NOT_SUPPORTED:
        raise NotImplementedError(msg)
    if rc == _TIMEOUT:
        raise SymmTimeoutError(msg, rc)
    raise SymmError(f"{msg} (result {rc})", rc)


class _Allocation:
    """One hcclGoMemAlloc: freed (hcclGoMemFree) when the buffer object the tensor
    storage holds dies."""

    def __init__(self, ptr: int, nbytes: int, comm: int, group) -> None:
        self.ptr, self.nbytes, self.comm, self.group = ptr, nbytes, comm, group


# Live allocations by address, for rendezvous(t). Weak: the tensor's storage owns them.
_allocations: weakref.WeakValueDictionary[int, _Allocation] = weakref.WeakValueDictionary()
_alloc_lock = threading.Lock()


def _free(ptr: int) -> None:
    # In a forked child (a DataLoader worker) the library refuses every call: the
    # parent still owns the memory, and the child's mapping ends with it.
    _lib().hcclGoMemFree(ptr)


def _shape(size) -> tuple[int, ...]:
    shape = (size,) if isinstance(size, int) else tuple(size)
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"size must be an int or a sequence of non-negative ints, not {size!r}")
    return shape


def _code(dtype: torch.dtype) -> int:
    if dtype not in _DTYPES:
        raise ValueError(f"dtype {dtype} is not supported (supported: {', '.join(map(str, _DTYPES))})")
    return _DTYPES[dtype]


def _view(ptr: int, nbytes: int, keep) -> torch.Tensor:
    """A uint8 tensor over nbytes at ptr that keeps `keep` alive while any view of it lives."""
    arr = (ctypes.c_ubyte * nbytes).from_address(ptr)
    arr._keep = keep  # the storage holds arr (its buffer), arr holds keep
    return torch.frombuffer(arr, dtype=torch.uint8)


def empty(size: int | Sequence[int], dtype: torch.dtype = torch.float32, group=None) -> torch.Tensor:
    """A CPU tensor of `size` and `dtype` whose storage every rank of `group` (default: the
    world) allocates, collectively and with the same size and dtype, in shared memory that
    the group's ranks on this host map. Its contents are zero. Freed when the last
    reference to its storage (and to any handle or buffer from rendezvous) dies; the
    process group may be destroyed before."""
    from .comm import get_backend

    shape = _shape(size)
    _code(dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = math.prod(shape) * itemsize
    if nbytes == 0:
        raise ValueError(f"symm.empty needs at least one element, got size {shape}")
    comm = get_backend(group).comm_handle
    ptr = ctypes.c_void_p()
    _check(_lib().hcclGoMemAlloc(comm, nbytes, ctypes.byref(ptr)), f"empty({shape}, {dtype})")
    alloc = _Allocation(ptr.value, nbytes, comm, group)
    raw = _view(alloc.ptr, nbytes, alloc)
    weakref.finalize(alloc, _free, alloc.ptr)
    with _alloc_lock:
        _allocations[alloc.ptr] = alloc
    return raw.view(dtype).view(shape)


def rendezvous(tensor: torch.Tensor, group=None) -> SymmetricMemoryHandle:
    """A handle on the symmetric memory behind `tensor` (from empty(), or a view of it)
    and on the peers' buffers of the same allocation. Local: it needs no message, the
    ranks mapped each other in empty()."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"rendezvous takes a tensor from torch_hccl_go.symm.empty, not {type(tensor).__name__}")
    with _alloc_lock:
        alloc = _allocations.get(tensor.untyped_storage().data_ptr())
    if alloc is None:
        raise ValueError("rendezvous: the tensor's storage is not from torch_hccl_go.symm.empty")
    return SymmetricMemoryHandle(tensor, alloc, group if group is not None else alloc.group)


def _timeout_ms(timeout) -> int:
    if timeout is None:
        return -1  # the group's timeout
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return max(1, int(timeout * 1000))


class SymmetricMemoryHandle:
    """What rendezvous returns: this rank's place in the allocation, and the peers' buffers.

    Offsets of put/get are in elements of the symmetric tensor's dtype from the start of
    the allocation, as torch's storage_offset; get_buffer's in elements of its dtype."""

    def __init__(self, tensor: torch.Tensor, alloc: _Allocation, group) -> None:
        self._tensor = tensor  # keeps the storage, hence the allocation, alive
        self._alloc = alloc
        self.dtype = tensor.dtype
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.buffer_size = alloc.nbytes  # bytes of every rank's buffer
        win = ctypes.c_uint64()
        _check(_lib().hcclGoWindowCreate(alloc.comm, alloc.ptr, ctypes.byref(win)), "rendezvous")
        self._win = win.value
        self._finalizer = weakref.finalize(self, _lib().hcclGoWindowDestroy, self._win)

    def _check_rank(self, what: str, rank) -> int:
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < self.world_size:
            raise ValueError(f"{what}: rank {rank!r} is not a rank of this group (0..{self.world_size - 1})")
        return rank

    def get_buffer(self, rank: int, size, dtype: torch.dtype, storage_offset: int = 0) -> torch.Tensor:
        """A tensor of `size` and `dtype` viewing rank's buffer from `storage_offset` elements
        (of dtype) on: loads and stores go straight to rank's memory. Rank must share this
        host (NotImplementedError otherwise)."""
        self._check_rank("get_buffer", rank)
        shape = _shape(size)
        _code(dtype)
        if not isinstance(storage_offset, int) or storage_offset < 0:
            raise ValueError(f"get_buffer: storage_offset must be a non-negative int, got {storage_offset!r}")
        itemsize = torch.empty((), dtype=dtype).element_size()
        start, end = storage_offset * itemsize, (storage_offset + math.prod(shape)) * itemsize
        if end > self.buffer_size:
            raise ValueError(
                f"get_buffer: {shape} {dtype} at storage_offset {storage_offset} needs bytes [{start}, {end}) "
                f"but rank {rank}'s buffer has {self.buffer_size} bytes"
            )
        ptr, nbytes = ctypes.c_void_p(), ctypes.c_size_t()
        _check(
            _lib().hcclGoWindowPeerPtr(self._win, rank, ctypes.byref(ptr), ctypes.byref(nbytes)),
            f"get_buffer(rank {rank})",
        )
        raw = _view(ptr.value, nbytes.value, self)
        return raw[start:end].view(dtype).view(shape)

    def barrier(self, timeout=None) -> None:
        """Returns once every rank of the group has entered; stores made before are visible
        to every rank after. Across hosts it is a barrier of the group's communicator."""
        _check(_lib().hcclGoWindowBarrier(self._win, _timeout_ms(timeout)), "barrier")

    def put_signal(self, dst_rank: int) -> None:
        """Signals dst_rank: every store this rank made before is visible to it once its
        wait_signal(this rank) returns. Signals count: n signals match n waits."""
        self._check_rank("put_signal", dst_rank)
        _check(_lib().hcclGoSignal(self._win, dst_rank), f"put_signal(rank {dst_rank})")

    def wait_signal(self, src_rank: int, timeout=None) -> None:
        """Waits for one signal of src_rank and consumes it. timeout: seconds or a timedelta
        (default: the group's timeout). A dead src_rank raises SymmError naming it within a
        few milliseconds; running out of time raises SymmTimeoutError."""
        self._check_rank("wait_signal", src_rank)
        _check(
            _lib().hcclGoWaitSignal(self._win, src_rank, _timeout_ms(timeout)),
            f"wait_signal(rank {src_rank})",
        )

    def _span(self, what: str, t: torch.Tensor, rank: int, offset) -> None:
        self._check_rank(what, rank)
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            raise ValueError(f"{what}: needs a CPU tensor, got {type(t).__name__} {getattr(t, 'device', '')}")
        if t.dtype != self.dtype:
            raise ValueError(f"{what}: tensor dtype {t.dtype} differs from the symmetric tensor's {self.dtype}")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError(f"{what}: offset must be a non-negative int, got {offset!r}")
        capacity = self.buffer_size // t.element_size()
        if offset + t.numel() > capacity:
            raise ValueError(
                f"{what}: {t.numel()} elements at offset {offset} do not fit rank {rank}'s buffer "
                f"of {capacity} {self.dtype} elements"
            )

    def put(self, src: torch.Tensor, dst_rank: int, offset: int = 0) -> None:
        """Copies src (a CPU tensor of the symmetric tensor's dtype) into dst_rank's buffer at
        `offset` elements. Done when it returns; tell dst_rank with put_signal."""
        self._span("put", src, dst_rank, offset)
        src = src.contiguous()
        _check(
            _lib().hcclGoPut(src.data_ptr(), src.numel(), _code(self.dtype), dst_rank, offset, self._win),
            f"put(rank {dst_rank})",
        )

    def get(self, dst: torch.Tensor, src_rank: int, offset: int = 0) -> None:
        """Copies dst.numel() elements from src_rank's buffer at `offset` elements into dst."""
        self._span("get", dst, src_rank, offset)
        out = dst if dst.is_contiguous() else torch.empty_like(dst, memory_format=torch.contiguous_format)
        _check(
            _lib().hcclGoGet(out.data_ptr(), out.numel(), _code(self.dtype), src_rank, offset, self._win),
            f"get(rank {src_rank})",
        )
        if out is not dst:
            dst.copy_(out)


# The smallest tensor allocating() serves from symmetric memory (pgbackend.SymmetricMinBytes:
# smaller collectives run in the arena anyway).
ALLOCATING_MIN_BYTES = 256 << 10


@contextlib.contextmanager
def allocating(group=None, min_bytes: int = ALLOCATING_MIN_BYTES) -> Iterator[None]:
    """Within the block, torch allocates this thread's CPU tensors of `min_bytes` or more in
    symmetric memory of `group` (default: the world), so that their collectives on that group
    run in place. Each such allocation is collective: every rank of the group must run the
    same allocations in the same order inside the block (deterministic set-up code, such as
    wrapping a model in DDP); a rank that allocates differently makes the others wait until
    the group's timeout. The memory is freed when the tensor is."""
    from . import _C
    from .comm import get_backend

    if not isinstance(min_bytes, int) or min_bytes < 1:
        raise ValueError(f"min_bytes must be a positive int, got {min_bytes!r}")
    _C.symm_allocator_push(get_backend(group).comm_handle, min_bytes)
    try:
        yield
    finally:
        _C.symm_allocator_pop()


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """torch's DistributedDataParallel with its gradient buckets in symmetric memory of its
    process group, so that the buckets' all_reduces run in place. Gradients are views of the
    buckets (gradient_as_bucket_view=True, no copy in or out). DDP allocates its buckets when
    it is built and rebuilds them once, at the first forward after the first backward: both
    run under allocating(), on every rank alike. Other arguments are DDP's."""

    def __init__(self, module: torch.nn.Module, *args, process_group=None, **kwargs) -> None:
        kwargs.setdefault("gradient_as_bucket_view", True)
        with allocating(process_group):
            super().__init__(module, *args, process_group=process_group, **kwargs)
        self._symm_group = process_group
        self._symm_rebuilt = False

    def forward(self, *inputs, **kwargs):
        if not self._symm_rebuilt and torch.is_grad_enabled():
            # DDP's own forward rebuilds here after the first backward; doing it first, under
            # the allocator, leaves it nothing to do.
            with allocating(self._symm_group):
                if self.reducer._rebuild_buckets():
                    self._symm_rebuilt = self._has_rebuilt_buckets = True
        return super().forward(*inputs, **kwargs)
