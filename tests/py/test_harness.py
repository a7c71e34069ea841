"""The harness itself: results come back in rank order; a raise, a crash and a hang are
each reported with the rank and its last step, and never hang the test run."""

from __future__ import annotations

import os
import time

import pytest
from harness import RankFailure, run_ranks


def _echo(ctx, base):
    ctx.progress("echoing")
    return base + ctx.rank


def _rank1_raises(ctx):
    ctx.progress("about to raise")
    if ctx.rank == 1:
        raise ValueError("boom on rank 1")
    time.sleep(60)  # the others wait "in a collective"


def _rank0_crashes(ctx):
    ctx.progress("about to crash")
    if ctx.rank == 0:
        os._exit(3)
    time.sleep(60)


def _rank2_hangs(ctx):
    ctx.progress(f"step A on rank {ctx.rank}")
    if ctx.rank == 2:
        ctx.progress("stuck in all_reduce float32 n=7")
        time.sleep(60)


def test_results_in_rank_order():
    assert run_ranks(_echo, 3, args=(10,), init=False, timeout=30) == [10, 11, 12]


def test_raise_is_reported_with_traceback():
    start = time.monotonic()
    with pytest.raises(RankFailure) as info:
        run_ranks(_rank1_raises, 2, init=False, timeout=30, grace=1)
    msg = str(info.value)
    assert "rank 1 raised" in msg and "boom on rank 1" in msg and "about to raise" in msg
    assert "ranks [0] did not finish after another rank failed" in msg
    assert time.monotonic() - start < 15  # peers are killed after a short grace


def test_crash_is_reported_with_exit_code():
    with pytest.raises(RankFailure, match="exit code 3"):
        run_ranks(_rank0_crashes, 2, init=False, timeout=30, grace=1)


def test_hang_names_rank_and_last_step():
    start = time.monotonic()
    with pytest.raises(RankFailure) as info:
        run_ranks(_rank2_hangs, 3, init=False, timeout=4)
    assert "ranks [2] did not finish within the 4 s timeout" in str(info.value)
    assert "rank 2: stuck in all_reduce float32 n=7" in str(info.value)
    assert time.monotonic() - start < 20


def _records_then_hangs(ctx):
    ctx.record("first", ("ok", ctx.rank))
    ctx.progress("second")
    time.sleep(60)


def test_recorded_results_survive_a_hang():
    with pytest.raises(RankFailure) as info:
        run_ranks(_records_then_hangs, 2, init=False, timeout=4)
    assert info.value.partial == {0: {"first": ("ok", 0)}, 1: {"first": ("ok", 1)}}


def _hangs_under_watchdog(ctx):
    with ctx.watchdog("slow check", 1):
        time.sleep(60)


def test_watchdog_records_the_hang_and_ends_the_rank():
    start = time.monotonic()
    with pytest.raises(RankFailure) as info:
        run_ranks(_hangs_under_watchdog, 2, init=False, timeout=30, grace=1)
    assert info.value.partial[0]["slow check"][0] == "failed"
    assert "did not finish within 1 s" in info.value.partial[1]["slow check"][1]
    assert time.monotonic() - start < 15
