"""The benchmark's --history: the protocol of one repetition, the per-op figure over ranks,
the repetition budget, the table; one short real run."""

from __future__ import annotations

import io

import pytest
from bench_cli import load, output, run_bench
from torch_hccl_go.bench import history, timing
from torch_hccl_go.bench.report_history import print_history
from torch_hccl_go.bench.results import Result

CONDITION = {c.name: c for c in history.CONDITIONS}


class Recorder:
    """Actions that log what a repetition does, in order."""

    def __init__(self):
        self.log: list[str] = []

    def actions(self, same_op_iters: int = 3) -> history.Actions:
        return history.Actions(
            op=lambda: self.log.append("op"),
            small_op=lambda: self.log.append("small"),
            compute_step=lambda: self.log.append("compute"),
            sync=lambda: self.log.append("sync"),
            same_op_iters=same_op_iters,
            floor_op=lambda: self.log.append("floor"),
        )


@pytest.mark.parametrize(
    "name, lead",
    [
        ("b2b", ["op"] * 3),
        ("8B x50", ["small"] * 50),
        ("idle 10ms", ["sleep 0.01"]),
    ],
)
def test_repetition_syncs_then_leads_in_then_times_one_op_then_one_more(name, lead, monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(history.time, "sleep", lambda s: rec.log.append(f"sleep {s:g}"))
    called, returned = history.time_one(CONDITION[name], rec.actions())
    assert rec.log == ["sync", *lead, "op", "op"]
    assert called <= returned


@pytest.mark.parametrize("name, lead", [("b2b", ["op"] * 3), ("idle 10ms", ["sleep 0.01"])])
def test_floor_repetition_syncs_then_leads_in_then_times_the_floor_op(name, lead, monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(history.time, "sleep", lambda s: rec.log.append(f"sleep {s:g}"))
    called, returned = history.time_floor(CONDITION[name], rec.actions())
    assert rec.log == ["sync", *lead, "floor"]
    assert called <= returned


def test_compute_condition_runs_matmul_steps():
    rec = Recorder()
    history.time_one(CONDITION["compute 3ms"], rec.actions())
    assert rec.log[0] == "sync" and rec.log[-2:] == ["op", "op"]
    assert set(rec.log[1:-2]) == {"compute"} and len(rec.log) > 3


def test_op_time_runs_from_the_last_call_to_the_last_return_on_one_clock():
    # Rank 1 calls 5 us late; rank 0 (early) returns last.
    called = [[100.0, 200.0], [100.000005, 200.000001]]
    returned = [[100.000020, 200.000009], [100.000015, 200.000008]]
    got = history.op_times(called, returned, shared_clock=True)
    assert got == pytest.approx([15e-6, 8e-6])


def test_op_time_across_hosts_is_the_slowest_ranks_own_time():
    called = [[100.0], [7.0]]  # clocks of two hosts: unrelated
    returned = [[100.000020], [7.000015]]
    assert history.op_times(called, returned, shared_clock=False) == pytest.approx([20e-6])


@pytest.mark.parametrize(
    "name, per_op_s, budget_s, want",
    [
        ("b2b", 10e-6, 1.0, timing.MAX_BATCHES),  # short ops: capped
        ("idle 10ms", 10e-6, 0.1, 9),  # the gap counts: 0.1 s / (10 ms + 2 ops)
        ("idle 100ms", 10e-6, 0.1, timing.MIN_BATCHES),  # never fewer than a median needs
        ("b2b", 1.0, 1.0, timing.MIN_BATCHES),
    ],
)
def test_repetitions(name, per_op_s, budget_s, want):
    assert history.repetitions(CONDITION[name], per_op_s, budget_s) == want


def test_split_times_gives_the_op_over_ranks_and_the_floor_per_rank():
    # One repetition: rank 1 calls the op 5 us late and returns last; its floor takes 3 us,
    # rank 0's 2 us.
    every = [[(100.0, 100.000020, 200.0, 200.000002)], [(100.000005, 100.000025, 300.0, 300.000003)]]
    op, floor = history.split_times(every, shared_clock=True)
    assert op == pytest.approx([20e-6]) and floor == pytest.approx([3e-6])


def test_history_table_gives_each_condition_against_the_warm_median():
    r = Result("hccl_go", "all_reduce", "float32", "sum", -1, 2, 8, 2, 1.0)
    r.batch_times = [10e-6, 10e-6, 10e-6]
    r.history = {"b2b": [9e-6, 10e-6, 11e-6], "idle 10ms": [40e-6, 50e-6, 60e-6]}
    out = io.StringIO()
    print_history([r], ("hccl_go",), out)
    lines = out.getvalue().splitlines()
    assert lines[-2].split() == ["8B", "10.00", "10.00", "1.00x", "50.00", "5.00x"]
    assert lines[-1] == "# highest: idle 10ms at 8B, 5.00x the warm median"


def test_history_table_gives_the_floor_and_what_goes_beyond_it():
    """The floor row under the size is the floor after each condition against its own b2b; the last line
    is the largest (op - floor) / warm, here idle 10ms: (50 - 30) / 10."""
    r = Result("hccl_go", "all_reduce", "float32", "sum", -1, 2, 8, 2, 1.0)
    r.batch_times = [10e-6] * 3
    r.history = {
        "b2b": [10e-6] * 3,
        "idle 10ms": [50e-6] * 3,
        history.floor_key("b2b"): [2e-6] * 3,
        history.floor_key("idle 10ms"): [30e-6] * 3,
    }
    out = io.StringIO()
    print_history([r], ("hccl_go",), out)
    lines = out.getvalue().splitlines()
    floor = next(line for line in lines if line.split()[:1] == ["floor"])
    assert floor.split() == ["floor", "2.00", "1.00x", "30.00", "15.00x"]
    assert lines[-1] == (
        "# beyond the floor: at most 2.00x the warm median "
        "(idle 10ms at 8B: op 50.00 us, floor 30.00 us, warm 10.00 us)"
    )


def test_history_table_says_when_b2b_is_off_the_warm_median():
    r = Result("gloo", "all_reduce", "float32", "sum", -1, 2, 8, 2, 1.0)
    r.batch_times = [200e-6] * 3
    r.history = {"b2b": [80e-6] * 3, "idle 10ms": [200e-6] * 3}
    out = io.StringIO()
    print_history([r], ("gloo",), out)
    assert (
        out.getvalue().splitlines()[-1]
        == "# b2b is off the warm median at 8B (0.40x): compare the conditions with b2b there"
    )


def test_result_json_keeps_the_history():
    r = Result("gloo", "all_reduce", "float32", "sum", -1, 2, 8, 2, 1.0, wrong=0)
    r.batch_times = [1e-4, 2e-4, 3e-4]
    r.history = {"idle 1ms": [5e-4, 6e-4, 7e-4]}
    back = Result.from_json(r.to_json())
    assert back.history.keys() == r.history.keys()
    assert back.history["idle 1ms"] == pytest.approx(r.history["idle 1ms"])
    assert back.batch_times == pytest.approx(r.batch_times) and back.time_us == pytest.approx(r.time_us)
    assert (back.backend, back.size, back.wrong, back.status) == ("gloo", 8, 0, "ok")


def test_bench_history_short_run(tmp_path):
    """Both backends in one job; every condition timed, within the repetition bounds."""
    out = tmp_path / "history.json"
    p = run_bench(["--sizes", "8", "--max-time", "0.05", "--history", "--json", str(out)], timeout=400)
    assert p.returncode == 0, output(p)
    rows = load(out)["results"]
    assert {r["backend"] for r in rows} == {"hccl_go", "gloo"}
    for r in rows:
        assert r["status"] == "ok" and r["wrong"] == 0, r
        assert set(r["history_us"]) == set(CONDITION) | {history.floor_key(c) for c in CONDITION}, r
        for times in r["history_us"].values():
            assert timing.MIN_BATCHES <= len(times) <= timing.MAX_BATCHES
            assert all(t > 0 for t in times)
    assert "# history hccl_go:" in p.stdout and "# history gloo:" in p.stdout
    assert p.stdout.count("# beyond the floor:") == 2, p.stdout
