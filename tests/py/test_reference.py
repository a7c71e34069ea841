"""The references and comparisons the multi-rank tests rely on (no processes spawned)."""

from __future__ import annotations

import pytest
import torch
from reference import (
    ALL_DTYPES,
    REDUCE_OPS,
    digest,
    make_input,
    mismatch,
    op_is_tested,
    op_is_valid,
    reduce_reference,
)


def t(values, dtype):
    return torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize(
    "dtype, op, inputs, expected",
    [
        (torch.int8, "SUM", [[100], [100]], [-56]),  # wraps like the C kernels
        (torch.uint8, "SUM", [[200], [100]], [44]),
        (torch.int8, "PRODUCT", [[16], [16]], [0]),
        (torch.int32, "AVG", [[-7], [0]], [-3]),  # truncation toward zero
        (torch.int16, "AVG", [[32767], [1], [0]], [-10922]),  # the wrapped sum, then divided
        (torch.int64, "BXOR", [[6], [3], [1]], [4]),
        (torch.uint8, "BAND", [[0xF0], [0x3C]], [0x30]),
        (torch.bool, "SUM", [[True, False], [False, False]], [True, False]),
        (torch.bool, "PRODUCT", [[True, True], [False, True]], [False, True]),
        (torch.bool, "BXOR", [[True, True], [True, False], [True, False]], [True, True]),
    ],
)
def test_exact_references(dtype, op, inputs, expected):
    got, bound = reduce_reference([t(v, dtype) for v in inputs], op)
    assert bound is None
    assert torch.equal(got, t(expected, dtype))


def test_float_bound_accepts_rounding_and_rejects_errors():
    xs = [make_input(r, torch.float16, 1000) for r in range(4)]
    expected, bound = reduce_reference(xs, "SUM")
    naive = xs[0] + xs[1] + xs[2] + xs[3]  # float16 arithmetic in one order
    assert mismatch(naive, expected, bound) is None
    off = naive.clone()
    off[17] += 1.0
    msg = mismatch(off, expected, bound)
    assert msg is not None and msg.startswith("1 of 1000 elements differ: [17]")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_leaving_out_a_rank_is_detected(dtype, op):
    """Every reference must notice a result that lacks one rank's contribution."""
    if not (op_is_valid(dtype, op) and op_is_tested(dtype, op)):
        pytest.skip("not a valid, tested pair")
    kind = "product" if op == "PRODUCT" else "any"
    xs = [make_input(r, dtype, 1000, kind) for r in range(3)]
    expected, bound = reduce_reference(xs, op)
    partial, _ = reduce_reference(xs[:2], op)
    if op == "AVG" and dtype.is_floating_point:
        partial = partial * 2 / 3  # even so, the third rank's values are missing
    wrong = partial.to(dtype) if bound is not None else partial
    assert mismatch(wrong, expected, bound) is not None


def test_mismatch_flags_nan_and_shape():
    assert "elements differ" in mismatch(t([float("nan")], torch.float32), t([float("nan")], torch.float32))
    assert "shape" in mismatch(torch.zeros(3), torch.zeros(4))


def test_inputs_are_reproducible_and_rank_specific():
    assert torch.equal(make_input(1, torch.bfloat16, 50), make_input(1, torch.bfloat16, 50))
    assert not torch.equal(make_input(0, torch.int32, 50), make_input(1, torch.int32, 50))
    assert digest(make_input(0, torch.bool, 9)) == digest(make_input(0, torch.bool, 9))
