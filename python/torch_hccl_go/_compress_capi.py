"""ctypes bindings of the C API calls that the C++ extension does not wrap:
hcclGoSparseAllReduce and hcclGoCommStats, with the work calls they need.

They act on the communicator behind a process group (its comm_handle), in the
libhccl_go.so the extension already loaded: CDLL of the same path returns the
same handle, so there is one Go runtime. ctypes releases the GIL during calls.
"""

from __future__ import annotations

import ctypes
import functools

import torch

# hcclGoDataType_t values (include/hccl_go.h) of the types sparse all_reduce takes.
SPARSE_DTYPES = {torch.float32: 7, torch.float64: 8, torch.int32: 2, torch.int64: 4}

_SUCCESS = 0


@functools.cache
def lib() -> ctypes.CDLL:
    from ._library import library_path

    u64, size, i32 = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int
    cdll = ctypes.CDLL(library_path())
    signatures = {
        "hcclGoSparseAllReduce": [
            ctypes.c_void_p,  # const int64_t* indices
            ctypes.c_void_p,  # const void* values
            size,  # nnz
            i32,  # datatype
            ctypes.c_void_p,  # void* denseOut
            size,  # denseCount
            u64,  # comm
            i32,  # stream
            ctypes.POINTER(u64),  # work
        ],
        "hcclGoCommStats": [u64, ctypes.c_char_p, size],
        "hcclGoGetLastError": [u64, ctypes.c_char_p, size],
        "hcclGoWorkWait": [u64, ctypes.c_int64],
        "hcclGoWorkError": [u64, ctypes.c_char_p, size],
        "hcclGoWorkFree": [u64],
    }
    for name, args in signatures.items():
        fn = getattr(cdll, name)
        fn.argtypes = args
        fn.restype = i32
    return cdll


class HcclGoError(RuntimeError):
    """A C API call failed; `result` is its hcclGoResult_t."""

    def __init__(self, message: str, result: int) -> None:
        super().__init__(message)
        self.result = result


def check(comm: int, rc: int, what: str) -> None:
    """Raises HcclGoError with the communicator's last error when rc is not success."""
    if rc != _SUCCESS:
        buf = ctypes.create_string_buffer(2048)
        lib().hcclGoGetLastError(comm, buf, len(buf))
        raise HcclGoError(f"hccl_go: {what}: {buf.value.decode(errors='replace')} (result {rc})", rc)


def wait_work(work: int, timeout_ms: int = -1) -> None:
    """Waits for a work handle (timeout_ms < 0: the communicator's timeout), frees
    it, and raises HcclGoError with the op's message if it failed."""
    cdll = lib()
    try:
        rc = cdll.hcclGoWorkWait(work, timeout_ms)
        if rc != _SUCCESS:
            buf = ctypes.create_string_buffer(2048)
            cdll.hcclGoWorkError(work, buf, len(buf))
            why = buf.value.decode(errors="replace")
            raise HcclGoError(f"hccl_go: sparse all_reduce failed: {why} (result {rc})", rc)
    finally:
        cdll.hcclGoWorkFree(work)


def comm_stats_json(comm: int) -> str:
    """hcclGoCommStats of comm, growing the buffer until the JSON fits."""
    size = 4096
    while True:
        buf = ctypes.create_string_buffer(size)
        rc = lib().hcclGoCommStats(comm, buf, size)
        if rc == _SUCCESS:
            return buf.value.decode()
        if len(buf.value) < size - 1 or size >= 1 << 24:
            check(comm, rc, "hcclGoCommStats")
        size *= 4
