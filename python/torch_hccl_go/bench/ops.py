"""The collectives the benchmark knows: buffers, the call, bus-bandwidth factor, reference.

Sizes follow nccl-tests (counts.py): `size` is the largest buffer of one rank (the output
of all_gather, the input of reduce_scatter, either buffer of all_to_all, the one buffer
of the in-place ops), `count` its number of elements. Bus bandwidth is algbw times a
factor that makes figures comparable across ops and world sizes: all_reduce 2(n-1)/n;
all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast and reduce 1.

Inputs are small integers, v(rank, i) = (i + 3*rank) % 7 + 1, so sums over up to
18 ranks are exact in every dtype (int8 included). The output is one segment (world
segments, one per source rank, for all_gather and all_to_all) whose expected values
repeat with period 7, so a reference computed for one chunk checks every chunk of the
segment: no second full-size copy, no per-element work beyond the comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .counts import all_reduce_factor, element_count, one, spread_factor

REDOPS = {
    "sum": dist.ReduceOp.SUM,
    "prod": dist.ReduceOp.PRODUCT,
    "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX,
    "avg": dist.ReduceOp.AVG,
}

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
}
DTYPE_ALIASES = {
    "float": "float32",
    "fp32": "float32",
    "double": "float64",
    "fp64": "float64",
    "half": "float16",
    "fp16": "float16",
    "bf16": "bfloat16",
    "int": "int32",
    "long": "int64",
}


def dtype_by_name(name: str) -> torch.dtype:
    key = DTYPE_ALIASES.get(name.lower(), name.lower())
    if key not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}: want one of {', '.join(DTYPES)}")
    return DTYPES[key]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def input_values(rank: int, index: torch.Tensor) -> torch.Tensor:
    """v(rank, i) for a tensor of int64 indices, as int64."""
    return (index + 3 * rank) % 7 + 1


@dataclass(frozen=True)
class Case:
    """One op at one size, as every rank runs it."""

    op: str
    dtype: torch.dtype
    redop: str
    root: int
    world: int
    count: int  # elements of the largest buffer (see module doc)

    @property
    def spec(self) -> OpSpec:
        return SPECS[self.op]

    @property
    def size(self) -> int:
        return self.count * self.dtype.itemsize

    @property
    def share(self) -> int:
        """Elements each rank contributes to / receives from a split buffer."""
        return self.count // self.world


@dataclass(frozen=True)
class OpSpec:
    name: str
    bus_factor: Callable[[int], float]
    # run(case, group, input, output) issues the collective and waits for it.
    run: Callable[[Case, object, torch.Tensor, torch.Tensor], object]
    # expect(case, rank, segment, int64 offsets in the segment) -> expected values in the
    # case's dtype, or None where the rank's output is unspecified (reduce off the root).
    expect: Callable[[Case, int, int, torch.Tensor], torch.Tensor | None]
    uses_redop: bool = False
    uses_root: bool = False
    in_place: bool = False  # one tensor is both input and output
    split: bool = False  # the buffer is cut in world equal shares: count must divide by world
    input_is_share: bool = False  # the input holds one share (all_gather)
    output_is_share: bool = False  # the output holds one share (reduce_scatter)
    output_by_source: bool = False  # the output is world segments, one per source rank

    def output_segments(self, case: Case) -> int:
        return case.world if self.output_by_source else 1

    def input_count(self, case: Case) -> int:
        return case.share if self.input_is_share else case.count

    def output_count(self, case: Case) -> int:
        return case.share if self.output_is_share else case.count


def combine(case: Case, values: Callable[[int], torch.Tensor]) -> torch.Tensor:
    """The reduction over ranks of values(rank) in float64 (int64 for integer dtypes, which
    wrap on overflow as the backends do), rounded once to the case's dtype."""
    wide = torch.float64 if case.dtype.is_floating_point else torch.int64
    acc = values(0).to(wide)
    for rank in range(1, case.world):
        v = values(rank).to(wide)
        if case.redop in ("sum", "avg"):
            acc += v
        elif case.redop == "prod":
            acc *= v
        elif case.redop == "min":
            acc = torch.minimum(acc, v)
        else:
            acc = torch.maximum(acc, v)
    if case.redop == "avg":
        acc = acc / case.world if case.dtype.is_floating_point else torch.div(acc, case.world, rounding_mode="trunc")
    return acc.to(case.dtype)


def _all_reduce(case, group, inp, out):
    return dist.all_reduce(inp, op=REDOPS[case.redop], group=group)


def _reduce(case, group, inp, out):
    return dist.reduce(inp, dst=case.root, op=REDOPS[case.redop], group=group)


def _broadcast(case, group, inp, out):
    return dist.broadcast(inp, src=case.root, group=group)


def _all_gather(case, group, inp, out):
    return dist.all_gather_into_tensor(out, inp, group=group)


def _reduce_scatter(case, group, inp, out):
    return dist.reduce_scatter_tensor(out, inp, op=REDOPS[case.redop], group=group)


def _all_to_all(case, group, inp, out):
    return dist.all_to_all_single(out, inp, group=group)


def _expect_all_reduce(case, rank, seg, k):
    return combine(case, lambda s: input_values(s, k))


def _expect_reduce(case, rank, seg, k):
    return combine(case, lambda s: input_values(s, k)) if rank == case.root else None


def _expect_broadcast(case, rank, seg, k):
    return input_values(case.root, k).to(case.dtype)


def _expect_all_gather(case, rank, seg, k):
    # Output segment `seg` is rank seg's input.
    return input_values(seg, k).to(case.dtype)


def _expect_reduce_scatter(case, rank, seg, k):
    # This rank's output is share number `rank` of the reduced input.
    return combine(case, lambda s: input_values(s, rank * case.share + k))


def _expect_all_to_all(case, rank, seg, k):
    # Output segment `seg` came from rank seg, which sent its share number `rank`.
    return input_values(seg, rank * case.share + k).to(case.dtype)


SPECS: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("all_reduce", all_reduce_factor, _all_reduce, _expect_all_reduce, uses_redop=True, in_place=True),
        OpSpec(
            "all_gather",
            spread_factor,
            _all_gather,
            _expect_all_gather,
            split=True,
            input_is_share=True,
            output_by_source=True,
        ),
        OpSpec(
            "reduce_scatter",
            spread_factor,
            _reduce_scatter,
            _expect_reduce_scatter,
            uses_redop=True,
            split=True,
            output_is_share=True,
        ),
        OpSpec("broadcast", one, _broadcast, _expect_broadcast, uses_root=True, in_place=True),
        OpSpec("all_to_all", spread_factor, _all_to_all, _expect_all_to_all, split=True, output_by_source=True),
        OpSpec("reduce", one, _reduce, _expect_reduce, uses_redop=True, uses_root=True, in_place=True),
    )
}


def make_case(op: str, dtype: torch.dtype, redop: str, root: int, world: int, size: int) -> Case:
    """The case for a requested size, rounded down to whole elements (and whole shares for
    split ops), at least one element per share."""
    spec = SPECS[op]
    count = element_count(size, dtype.itemsize, world if spec.split else 1)
    return Case(op, dtype, redop if spec.uses_redop else "none", root if spec.uses_root else -1, world, count)
