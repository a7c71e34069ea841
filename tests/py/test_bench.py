"""The benchmark CLI (python -m torch_hccl_go.bench): its batch plan, and one short real run."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from torch_hccl_go.bench import timing


@pytest.mark.parametrize(
    "per_iter_s, iters, rewarm_s, want_per_batch, want_rewarm",
    [
        # Adaptive, small op: ~10 ms batches, ~5 ms of untimed iterations before each.
        (10e-6, None, 0.005, 1000, 500),
        # The rewarm never exceeds a batch.
        (10e-6, None, 0.050, 1000, 1000),
        # Rewarm off.
        (10e-6, None, 0.0, 1000, 0),
        # Long iterations: still one (their buffers are cold after the other backend's batch).
        (0.004, None, 0.005, 2, 2),
        (1.0, None, 0.005, 1, 1),
        (1.0, None, 0.0, 1, 0),
        # Fixed --iters 100: 10 batches of 10, rewarm from the estimate.
        (1e-3, 100, 0.005, 10, 5),
    ],
)
def test_plan_rewarm(per_iter_s, iters, rewarm_s, want_per_batch, want_rewarm):
    p = timing.plan(per_iter_s, iters, 1.0, rewarm_s)
    assert p.iters_per_batch == pytest.approx(want_per_batch, abs=1)  # float division
    assert p.rewarm == pytest.approx(want_rewarm, abs=1)
    assert p.rewarm <= p.iters_per_batch
    assert p.batches >= 3


@pytest.mark.parametrize(
    "per_iter_s, budget_s, want",
    [
        (10e-6, 0.25, math.floor(timing.ESTIMATE_S / 10e-6)),
        (10e-6, 0.001, 100),  # the budget left bounds the run
        (0.5, 0.25, 0),  # too long to time again: the estimate so far stands
    ],
)
def test_estimate_run_iters(per_iter_s, budget_s, want):
    assert timing.estimate_run_iters(per_iter_s, budget_s) == pytest.approx(want, abs=1)


def test_bench_cli_short_run(tmp_path):
    """Two ranks launched by the benchmark itself, both backends, every result checked."""
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "torch_hccl_go.bench", "--ops", "all_reduce,broadcast", "--sizes", "8,4K"]
    cmd += ["--max-time", "0.1", "--no-progress", "--json", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "hccl_go vs gloo" in p.stdout
    results = json.loads(out.read_text())["results"]
    assert {(r["backend"], r["op"], r["size"]) for r in results} == {
        (b, op, size) for b in ("hccl_go", "gloo") for op in ("all_reduce", "broadcast") for size in (8, 4096)
    }
    for r in results:
        assert r["status"] == "ok" and r["wrong"] == 0, r
        assert r["batch_times_us"] and r["rewarm_iters"] <= r["iters_per_batch"], r
