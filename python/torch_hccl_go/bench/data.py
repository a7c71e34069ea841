"""Buffers of one case: allocation, input pattern and the one-time check against the reference.

Filling and checking walk the buffers in chunks so that a 512 MiB buffer never needs a
second full-size temporary (the memory budget is 2 ranks x 2 backends x 512 MiB in 24 GiB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .ops import Case, input_values

CHUNK = 7 << 19  # elements per step of fill/check; a multiple of the pattern's period, 7


@dataclass
class Buffers:
    input: torch.Tensor
    output: torch.Tensor  # the same tensor as input for in-place ops


def allocate(case: Case) -> Buffers:
    spec = case.spec
    inp = torch.empty(spec.input_count(case), dtype=case.dtype)
    out = inp if spec.in_place else torch.empty(spec.output_count(case), dtype=case.dtype)
    return Buffers(inp, out)


def memcpy_op(buffers: Buffers) -> Callable[[], object]:
    """The machine's pace (Result.memcpy_times): a local copy of the input into a scratch
    buffer of its size, with torch's own copy, as every rank runs it at once."""
    scratch = torch.empty_like(buffers.input)
    return lambda: scratch.copy_(buffers.input)


def fill_input(case: Case, rank: int, buffers: Buffers) -> None:
    """Writes v(rank, i) into the input; zeroes a separate output so stale data cannot pass the check."""
    inp = buffers.input
    pattern = input_values(rank, torch.arange(min(CHUNK, inp.numel()))).to(case.dtype)
    for start in range(0, inp.numel(), CHUNK):
        end = min(start + CHUNK, inp.numel())
        inp[start:end] = pattern[: end - start]
    if buffers.output is not inp:
        buffers.output.zero_()


def count_wrong(case: Case, rank: int, buffers: Buffers) -> int:
    """Elements of this rank's output that differ from the reference (0 where unchecked)."""
    spec, out = case.spec, buffers.output
    rtol = _tolerance(case)
    segments = spec.output_segments(case)
    length = out.numel() // segments
    wrong = 0
    for seg in range(segments):
        # Periodic reference: the first chunk's expected values hold for every chunk.
        expected = spec.expect(case, rank, seg, torch.arange(min(CHUNK, length)))
        if expected is None:
            return 0
        part = out[seg * length : (seg + 1) * length]
        for start in range(0, length, CHUNK):
            got = part[start : start + CHUNK]
            wrong += _mismatches(got, expected[: got.numel()], rtol)
    return wrong


def _mismatches(got: torch.Tensor, expected: torch.Tensor, rtol: float) -> int:
    if rtol == 0.0:
        return int((got != expected).sum())
    close = torch.isclose(got.to(torch.float64), expected.to(torch.float64), rtol=rtol, atol=0.0)
    return int((~close).sum())


def _tolerance(case: Case) -> float:
    """Relative tolerance. Sums, min and max of the small integer inputs are exact in every
    dtype; prod and avg may round differently from the reference (which rounds once)."""
    if case.redop in ("prod", "avg") and case.dtype.is_floating_point:
        return 2 * torch.finfo(case.dtype).eps * case.world
    return 0.0
