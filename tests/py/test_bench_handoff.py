"""The benchmark's cross-CPU probe (bench/handoff.py, csrc/handoff_probe.c): two processes
read the same round-trip time, a rank that takes no part reads None, a side whose partner
never comes reads None within the timeout, and nothing is left in /dev/shm."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest
from torch_hccl_go.bench import handoff


def _side(rank: int, token: str, barrier, readings, n: int) -> None:
    probe = handoff.Handoff(rank, True, token, barrier.wait)
    try:
        readings.put((rank, [probe.measure() for _ in range(n)]))
    finally:
        probe.close()


def _token() -> str:
    return f"test_{os.getpid()}_{time.time_ns()}"


def test_the_library_is_built():
    assert handoff.LIBRARY.is_file(), f"{handoff.LIBRARY} missing: setup.py builds it"


def test_two_ranks_read_a_round_trip_and_leave_nothing_behind():
    ctx = mp.get_context("spawn")
    token, barrier, readings = _token(), ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_side, args=(r, token, barrier, readings, 5)) for r in (0, 1)]
    for p in procs:
        p.start()
    got = dict(readings.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for rank in (0, 1):
        assert len(got[rank]) == 5 and all(x is not None and 0 < x < 1e7 for x in got[rank]), got
    assert not os.path.exists(handoff.path_for(token))


def test_ranks_other_than_0_and_1_and_other_hosts_take_no_part():
    token = _token()
    assert handoff.Handoff(2, True, token, lambda: None).measure() is None
    assert handoff.Handoff(1, False, token, lambda: None).measure() is None
    assert not os.path.exists(handoff.path_for(token))


def test_a_partner_that_never_comes_reads_none_within_the_timeout(monkeypatch):
    monkeypatch.setattr(handoff, "TIMEOUT_S", 0.2)
    token = _token()
    probe = handoff.Handoff(0, True, token, lambda: None)
    try:
        t0 = time.monotonic()
        assert probe.measure() is None
        assert time.monotonic() - t0 < 5
    finally:
        probe.close()
    assert not os.path.exists(handoff.path_for(token))


@pytest.mark.parametrize("rounds", [0, 9])
def test_too_few_rounds_is_refused(rounds, monkeypatch):
    monkeypatch.setattr(handoff, "ROUNDS", rounds)
    probe = handoff.Handoff(0, True, _token(), lambda: None)
    try:
        assert probe.measure() is None
    finally:
        probe.close()
