"""Inputs every rank can recompute, reference results, and comparisons that explain themselves.

Each rank's input is seeded by (rank, dtype, size, kind) only, so any rank can
build every other rank's input and compute the expected result of a collective
locally, with no communication.

Reductions are computed exactly where possible: integers in int64 and then
wrapped to the width of the dtype (two's complement, as the C kernels do), floats
in float64 with an error bound for the order in which the backend adds them.
"""

from __future__ import annotations

import hashlib
import zlib

import torch

FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + (torch.bool,)

REDUCE_OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")
BITWISE_OPS = ("BAND", "BOR", "BXOR")
PREMUL_FACTOR = 0.75  # exact in every float format, so the scaling itself adds no error


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def op_is_valid(dtype: torch.dtype, op: str) -> bool:
    """Whether the backend must accept (dtype, op); the others must raise a clear error."""
    if op in BITWISE_OPS:
        return not dtype.is_floating_point
    if dtype == torch.bool:
        return op not in ("AVG", "PREMUL_SUM")
    return True


def op_is_tested(dtype: torch.dtype, op: str) -> bool:
    """PREMUL_SUM on integers has no agreed meaning for a float factor: not tested either way."""
    return not (op == "PREMUL_SUM" and dtype in INT_DTYPES)


def backend_supports(backend: str, dtype: torch.dtype, op: str = "") -> bool:
    """Whether `backend` claims to support the dtype (and reduce op). hccl_go supports every
    valid pair; gloo lacks int16, PREMUL_SUM and AVG on integers."""
    if backend != "gloo":
        return True
    if dtype == torch.int16 or op == "PREMUL_SUM":
        return False
    return not (op == "AVG" and not dtype.is_floating_point and dtype != torch.bool)


def make_input(rank: int, dtype: torch.dtype, n: int, kind: str = "any") -> torch.Tensor:
    """Rank `rank`'s input of n elements. kind="product" keeps float magnitudes near 1 so products
    of several ranks neither overflow nor underflow."""
    seed = zlib.crc32(f"{rank}|{dtype}|{n}|{kind}".encode())
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        if kind == "product":
            mag = 0.5 + torch.rand(n, generator=g, dtype=torch.float64)
            sign = torch.randint(0, 2, (n,), generator=g) * 2 - 1
            return (mag * sign).to(dtype)
        return (torch.randn(n, generator=g, dtype=torch.float64) * 4).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype == torch.int64:
        lo, hi = -(2**40), 2**40  # sums of a few ranks stay exact in int64
    else:
        info = torch.iinfo(dtype)
        lo, hi = info.min, info.max + 1
    return torch.randint(lo, hi, (n,), generator=g, dtype=torch.int64).to(dtype)


def poison(n: int, dtype: torch.dtype) -> torch.Tensor:
    """An output buffer filled with values no correct collective leaves behind by accident."""
    if dtype.is_floating_point:
        return torch.full((n,), float("nan"), dtype=dtype)
    if dtype == torch.bool:
        return torch.ones(n, dtype=torch.bool)
    return torch.full((n,), 0x5A, dtype=dtype)


def _wrap(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Wraps int64 values to the two's complement range of an integer dtype."""
    if dtype == torch.int64:
        return v
    bits = torch.iinfo(dtype).bits
    if dtype == torch.uint8:
        return (v & 0xFF).to(dtype)
    half = 1 << (bits - 1)
    return (((v + half) & ((1 << bits) - 1)) - half).to(dtype)


def reduce_reference(inputs: list[torch.Tensor], op: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The exact reduction of `inputs` (one tensor per rank) and, for floats, a per-element bound
    on the rounding error a correct backend may add. Floats come back as float64."""
    dtype = inputs[0].dtype
    p = len(inputs)
    if dtype == torch.bool:
        stack = torch.stack(inputs)
        if op in ("SUM", "MAX", "BOR"):
            return stack.any(0), None
        if op in ("PRODUCT", "MIN", "BAND"):
            return stack.all(0), None
        if op == "BXOR":
            return stack.sum(0, dtype=torch.int64) % 2 == 1, None
        raise ValueError(f"no reference for {op} on bool")

    if not dtype.is_floating_point:
        acc = inputs[0].to(torch.int64)
        for x in inputs[1:]:
            x = x.to(torch.int64)
            if op in ("SUM", "AVG"):
                acc = acc + x
            elif op == "PRODUCT":
                acc = acc * x  # wraps modulo 2**64, which preserves the low bits
            elif op == "MIN":
                acc = torch.minimum(acc, x)
            elif op == "MAX":
                acc = torch.maximum(acc, x)
            elif op == "BAND":
                acc = acc & x
            elif op == "BOR":
                acc = acc | x
            elif op == "BXOR":
                acc = acc ^ x
            else:
                raise ValueError(f"no reference for {op} on {dtype}")
        acc = _wrap(acc, dtype)
        if op == "AVG":  # the wrapped sum, divided with truncation toward zero
            acc = torch.div(acc.to(torch.int64), p, rounding_mode="trunc").to(dtype)
        return acc, None

    xs = torch.stack(inputs).to(torch.float64)
    eps = torch.finfo(dtype).eps
    floor = torch.finfo(dtype).smallest_normal * p
    if op == "PREMUL_SUM":
        xs *= PREMUL_FACTOR
    if op in ("SUM", "AVG", "PREMUL_SUM"):
        total = xs.sum(0)
        bound = xs.abs_().sum(0).mul_((p + 2) * eps).add_(floor)
        if op == "AVG":
            return total / p, bound / p
        return total, bound
    if op == "PRODUCT":
        prod = xs.prod(0)
        return prod, prod.abs().mul_((p + 2) * eps).add_(floor)
    if op == "MIN":
        return xs.min(0).values, torch.zeros(xs.shape[1:], dtype=torch.float64)
    if op == "MAX":
        return xs.max(0).values, torch.zeros(xs.shape[1:], dtype=torch.float64)
    raise ValueError(f"no reference for {op} on {dtype}")


def mismatch(got: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor | None = None) -> str | None:
    """None when got matches expected (exactly, or within bound elementwise for floats);
    otherwise a message saying how many elements differ and showing the first ones."""
    if got.shape != expected.shape:
        return f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if bound is None and got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.numel() == 0:
        return None
    if bound is None:
        bad = got != expected
        if got.dtype.is_floating_point:  # NaN never matches, even NaN
            bad = bad | got.isnan()
    else:
        g = got.to(torch.float64)
        bad = ((g - expected).abs() > bound) | g.isnan()
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    idx = bad.nonzero().flatten()[:3].tolist()
    shown = ", ".join(
        f"[{i}] got {got[i].item()!r} expected {expected[i].item()!r}"
        + (f" (tol {bound[i].item():.3g})" if bound is not None else "")
        for i in idx
    )
    return f"{n_bad} of {got.numel()} elements differ: {shown}"


def digest(t: torch.Tensor) -> str:
    """A short hash of the tensor's bytes, to compare results bitwise across ranks."""
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return hashlib.sha1(raw).hexdigest()[:16]
