"""The benchmark's --jobs mode: spread over jobs, slow-job flags, the side-by-side table and
the job schedule on synthetic figures; the job runner's time limit; one short real run."""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import time

import pytest
from bench_cli import load, output, run_bench
from torch_hccl_go.bench import schedule as schedule_mod
from torch_hccl_go.bench.compare_table import print_compare
from torch_hccl_go.bench.config import parse_args, to_argv
from torch_hccl_go.bench.jobs import JobSpec, run_job
from torch_hccl_go.bench.report import in_report_order
from torch_hccl_go.bench.report_jobs import print_run_order, print_spread
from torch_hccl_go.bench.results import NOT_AVAILABLE, OK, Result
from torch_hccl_go.bench.spread import (
    SLOW_FACTOR,
    SLOW_HANDOFF,
    Spread,
    fast_state_job_results,
    slow_jobs,
    spreads,
    summary_results,
)


def result(backend: str, size: int, us: float | None, op: str = "all_reduce", **kw) -> Result:
    """A result whose median time is us (None: not timed, n/a)."""
    r = Result(backend, op, "float32", "sum", -1, 2, size, size // 4, 1.0, **kw)
    if us is None:
        r.status, r.reason = NOT_AVAILABLE, "not this op"
    else:
        r.batch_times = [us * 1e-6 * f for f in (0.9, 1.0, 1.1)]  # median: us
    return r


def test_spread_flags_jobs_above_the_factor_of_the_median_job():
    times = {1: 10.0, 2: 9.0, 3: 10.0, 4: 10.0 * SLOW_FACTOR * 1.01, 5: 10.0 * SLOW_FACTOR * 0.99}
    (s,) = spreads([(job, result("hccl_go", 8, us)) for job, us in times.items()])
    assert s.median == pytest.approx(10.0e-6)
    assert s.min == pytest.approx(9.0e-6) and s.max == pytest.approx(times[4] * 1e-6)
    assert [job for job, _ in s.slow()] == [4]  # job 5 is just under the factor


def test_slow_jobs_counts_the_cases_each_job_was_slow_at():
    job_results = []
    for size in (8, 64, 1024):
        for job in range(1, 6):
            us = 100.0 if job == 3 else 10.0  # job 3 slow throughout
            if job == 5 and size == 64:
                us = 50.0  # job 5 slow once
            job_results.append((job, result("hccl_go", size, us)))
        job_results += [(job, result("gloo", size, 200.0)) for job in range(1, 6)]
    counts = slow_jobs(spreads(job_results))
    assert counts["hccl_go"] == {3: 3, 5: 1}
    assert not counts["gloo"]


def test_a_slow_job_whose_memcpy_was_slow_alike_is_not_slow_beyond_the_machine():
    # job 2: op and memcpy 3x (the machine); job 4: op 3x, memcpy as usual (the library);
    # job 5: op 3x and no memcpy to tell by.
    ops = {1: 10.0, 2: 30.0, 3: 10.0, 4: 30.0, 5: 30.0, 6: 10.0, 7: 10.0}
    memcpy = {1: 8.0, 2: 24.0, 3: 8.0, 4: 8.0, 6: 8.0, 7: 8.0}
    rows = []
    for job, us in ops.items():
        r = result("hccl_go", 8, us)
        if job in memcpy:
            r.memcpy_times = [memcpy[job] * 1e-6]
        rows.append((job, r))
    (s,) = spreads(rows)
    assert [job for job, _ in s.slow()] == [2, 4, 5]
    assert [job for job, _ in s.slow_beyond_machine()] == [4, 5]
    assert dict(s.ratios)[2] == pytest.approx(1.25)
    assert slow_jobs([s], Spread.slow_beyond_machine)["hccl_go"] == {4: 1, 5: 1}
    out = io.StringIO()
    print_spread([s], ("hccl_go",), 7, out)
    text = out.getvalue()
    assert "job 2 (30.00, memcpy alike), job 4 (30.00), job 5 (30.00)" in text
    assert "# hccl_go: slow beyond the machine (memcpy not slow alike): 2 of 7 (job 4 at 1 of 1 cases" in text


def with_handoff(r: Result, readings: list[float]) -> Result:
    """r with its batches set to times (us) framed by the hand-off readings (ns)."""
    r.handoff_ns = readings
    return r


def test_batches_in_the_machine_slow_state_are_left_out_of_the_fast_state_spread():
    # A batch is slow-state when either reading that frames it is above SLOW_HANDOFF x the
    # run's lowest (80 ns here). job 2: slow throughout, in the machine's slow state (the
    # machine's doing); job 3: slow with the machine fast (the library's); job 4: its first
    # batch in the slow state, the other two fast.
    rows = []
    for job in range(1, 8):
        r = result("hccl_go", 1 << 20, 150.0)
        readings = [80.0, 85.0, 82.0, 84.0]
        if job == 2:
            r.batch_times = [700e-6, 720e-6, 710e-6]
            readings = [330.0, 340.0, 320.0, 335.0]
        elif job == 3:
            r.batch_times = [700e-6, 720e-6, 710e-6]
        elif job == 4:
            r.batch_times = [900e-6, 150e-6, 160e-6]
            readings = [85.0, SLOW_HANDOFF * 80.0 * 1.1, 84.0, 83.0]
        rows.append((job, with_handoff(r, readings)))
    (s,) = spreads(rows)
    assert [job for job, _ in s.slow()] == [2, 3]
    assert [job for job, _ in s.slow_in_fast_state()] == [3]
    fast = dict(s.job_fast)
    assert 2 not in fast  # no batch of job 2 in the fast state
    assert fast[4] == pytest.approx(160e-6)  # batch 0 and 1 touch the slow reading; batch 2 is left
    assert dict((job, k) for job, k, _ in s.job_slow_batches) == {1: 0, 2: 3, 3: 0, 4: 2, 5: 0, 6: 0, 7: 0}
    assert s.slow_share == pytest.approx(5 / 21)
    assert slow_jobs([s], Spread.slow_in_fast_state)["hccl_go"] == {3: 1}
    out = io.StringIO()
    print_spread([s], ("hccl_go",), 7, out)
    text = out.getvalue()
    assert "24%  1 of 6: job 3 (710.0)" in text
    assert "# hccl_go: slow in the machine's fast cross-CPU state: 1 of 7 (job 3 at 1 of 1 cases" in text


def test_fast_state_summary_keeps_only_the_fast_batches_of_each_job():
    fast_job = with_handoff(result("hccl_go", 8, 10.0), [80.0, 82.0, 81.0, 83.0])
    mixed = result("hccl_go", 8, 10.0)
    mixed.batch_times = [40e-6, 12e-6, 12e-6]
    with_handoff(mixed, [300.0, 300.0, 81.0, 82.0])  # batch 0 and 1 framed by a slow reading
    all_slow = with_handoff(result("hccl_go", 8, 50.0), [300.0] * 4)
    rows = fast_state_job_results([(1, fast_job), (2, mixed), (3, all_slow)])
    assert [job for job, _ in rows] == [1, 2]  # job 3 had no batch in the fast state
    assert rows[1][1].batch_times == [12e-6]
    (summary,) = summary_results(rows)
    assert summary.time_us == pytest.approx(11.0)  # median of the jobs' 10 and 12
    assert fast_state_job_results([(1, result("hccl_go", 8, 10.0))]) == []


def test_without_handoff_readings_there_is_no_fast_state_report():
    (s,) = spreads([(job, result("hccl_go", 8, 10.0)) for job in (1, 2, 3)])
    assert s.slow_share is None and not s.job_fast
    out = io.StringIO()
    print_spread([s], ("hccl_go",), 3, out)
    assert "fast cross-CPU state" not in out.getvalue()


def test_handoff_readings_round_trip_through_json():
    r = with_handoff(result("hccl_go", 8, 10.0), [80.0, None, 90.0, 85.0])
    back = Result.from_json(r.to_json())
    assert back.handoff_ns == [80.0, None, 90.0, 85.0]


def test_run_order_lists_the_slow_jobs_where_they_ran():
    rows = [(job, result("hccl_go", 8, 30.0 if job == 2 else 10.0)) for job in (1, 2, 3)]
    rows += [(job, result("mpi", 8, 3.0 if job == 2 else 1.0)) for job in (1, 2, 3)]
    order = [("hccl_go", 1), ("mpi", 1), ("mpi", 2), ("hccl_go", 2), ("hccl_go", 3), ("mpi", 3)]
    out = io.StringIO()
    print_run_order(spreads(rows), order, out)
    assert out.getvalue() == "# slow jobs by their place in the run of 6: 3: mpi #2, 4: hccl_go #2\n"


def test_memcpy_times_round_trip_through_json():
    r = result("hccl_go", 8, 10.0)
    r.memcpy_times = [5e-6, 6e-6, 7e-6]
    back = Result.from_json(r.to_json())
    assert back.memcpy_times == pytest.approx(r.memcpy_times)
    assert r.to_json()["memcpy_us"] == pytest.approx(6.0)


def test_summary_result_is_the_median_over_jobs():
    job_results = [(job, result("hccl_go", 8, us, wrong=0)) for job, us in ((1, 10.0), (2, 30.0), (3, 12.0))]
    job_results.append((4, result("hccl_go", 8, None)))  # a job that could not time it
    (r,) = summary_results(job_results)
    assert r.status == OK and r.wrong == 0
    assert r.time_us == pytest.approx(12.0)
    assert sorted(r.batch_times) == pytest.approx([10e-6, 12e-6, 30e-6])


def test_summary_result_of_a_case_no_job_timed_keeps_the_reason():
    (r,) = summary_results([(1, result("deepspeed", 8, None)), (2, result("deepspeed", 8, None))])
    assert r.status == NOT_AVAILABLE and r.reason == "not this op" and not r.ok


def test_spread_report_names_the_slow_jobs():
    job_results = [(job, result("hccl_go", 8, 120.0 if job == 2 else 10.0)) for job in (1, 2, 3)]
    job_results += [(job, result("gloo", 8, 200.0)) for job in (1, 2, 3)]
    out = io.StringIO()
    print_spread(spreads(job_results), ("hccl_go", "gloo"), 3, out)
    text = out.getvalue()
    assert "1 of 3: job 2 (120.0)" in text
    assert "# hccl_go: slow jobs: 1 of 3 (job 2 at 1 of 1 cases)" in text
    assert "# gloo: slow jobs: 0 of 3" in text


def test_compare_table_shows_each_library_and_its_ratio_to_the_first():
    rows = [
        result("hccl_go", 8, 10.0),
        result("gloo", 8, 200.0),
        result("mpi", 8, 5.0),
        result("hccl_go", 8, 20.0, op="all_gather"),
        result("mpi", 8, 30.0, op="all_gather"),
    ]  # deepspeed has no row at all: it lacks both ops here
    names = ("hccl_go", "gloo", "deepspeed", "mpi")
    out = io.StringIO()
    print_compare(in_report_order(rows, ("all_reduce", "all_gather"), names), names, out)
    lines = [line.split() for line in out.getvalue().splitlines() if line.startswith(" ")]
    assert lines[0] == ["8B", "10.00", "|", "200.0", "20.00x", "|", "-", "-", "|", "5.00", "0.50x"]
    assert lines[1] == ["8B", "20.00", "|", "-", "-", "|", "-", "-", "|", "30.00", "1.50x"]


def test_compare_table_shows_the_status_of_an_untimed_case():
    rows = [result("hccl_go", 8, 10.0), result("deepspeed", 8, None)]
    out = io.StringIO()
    print_compare(rows, ("hccl_go", "deepspeed"), out)
    assert out.getvalue().splitlines()[-1].split() == ["8B", "10.00", "|", "n/a", "-"]


def test_config_round_trips_through_a_jobs_command_line():
    cfg = parse_args(["--jobs", "3", "--sizes", "8,64K", "--peers", "mpi", "--history", "--iters", "7", "--no-check"])
    again = parse_args(to_argv(cfg))
    assert dataclasses.replace(again, argv=()) == dataclasses.replace(cfg, argv=())


@pytest.mark.parametrize(
    "args, want",
    [
        # N jobs per backend and peer, one of each a round, the order rotated each round.
        (
            ["--jobs", "3", "--peers", "mpi"],
            ["hccl_go", "gloo", "mpi", "gloo", "mpi", "hccl_go", "mpi", "hccl_go", "gloo"],
        ),
        # Without --jobs the backends share one job, as in a plain run; a peer gets its own.
        (["--peers", "mpi"], ["hccl_go,gloo", "mpi"]),
    ],
)
def test_schedule_interleaves_libraries(args, want, monkeypatch, tmp_path):
    monkeypatch.setattr(schedule_mod.PEERS["mpi"], "skip_reason", lambda cfg: None)
    plan = schedule_mod.schedule(parse_args(args), str(tmp_path))
    assert [spec.name for spec in plan.specs] == want
    assert len({spec.json_path for spec in plan.specs}) == len(want)
    numbers = {}
    for spec in plan.specs:
        numbers.setdefault(spec.name, []).append(spec.number)
    assert all(n == list(range(1, len(n) + 1)) for n in numbers.values())


def test_schedule_leaves_out_a_peer_that_cannot_run(monkeypatch, tmp_path):
    monkeypatch.setattr(schedule_mod.PEERS["mpi"], "skip_reason", lambda cfg: "mpirun is not installed")
    plan = schedule_mod.schedule(parse_args(["--jobs", "2", "--peers", "mpi"]), str(tmp_path))
    assert plan.skipped == {"mpi": "mpirun is not installed"}
    assert [spec.name for spec in plan.specs] == ["hccl_go", "gloo", "gloo", "hccl_go"]


def test_run_job_past_its_limit_ends_the_whole_process_group(tmp_path):
    """A job that hangs is killed with every process it started (a rank, a peer's daemon)."""
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(120)\n"
    )
    spec = JobSpec("hang", 1, (sys.executable, "-c", script), str(tmp_path / "none.json"))
    run = run_job(spec, timeout_s=3)
    assert run.status == "timeout" and not run.ok
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purpose
        return f.read().split(") ")[1][0] != "Z"


def test_run_job_that_fails_keeps_its_output(tmp_path):
    spec = JobSpec(
        "boom", 1, (sys.executable, "-c", "print('rank 1 broke'); raise SystemExit(3)"), str(tmp_path / "x.json")
    )
    run = run_job(spec, timeout_s=60)
    assert run.status == "failed" and run.reason == "exit status 3"
    assert "rank 1 broke" in run.output_tail


def test_bench_jobs_short_run(tmp_path):
    """Two fresh jobs per backend, interleaved; every job's figures kept, spread reported."""
    out = tmp_path / "jobs.json"
    p = run_bench(["--jobs", "2", "--sizes", "8", "--max-time", "0.05", "--json", str(out)], timeout=400)
    assert p.returncode == 0, output(p)
    doc = load(out)
    assert [(j["name"], j["number"]) for j in doc["jobs"]] == [("hccl_go", 1), ("gloo", 1), ("gloo", 2), ("hccl_go", 2)]
    for job in doc["jobs"]:
        assert job["status"] == "ok", job
        assert [(r["backend"], r["size"]) for r in job["results"]] == [(job["name"], 8)]
        assert all(r["status"] == "ok" and r["wrong"] == 0 and r["batch_times_us"] for r in job["results"])
        # every job times the machine's pace beside its op
        assert all(r["memcpy_us"] > 0 and len(r["memcpy_times_us"]) >= 1 for r in job["results"])
        # and the cross-CPU state before and after every batch (ranks 0 and 1 share the host)
        assert all(
            len(r["handoff_ns"]) == len(r["batch_times_us"]) + 1 and all(x > 0 for x in r["handoff_ns"])
            for r in job["results"]
        )
    assert len(doc["summary"]) == 2 and all(len(r["batch_times_us"]) == 2 for r in doc["summary"])
    assert "# hccl_go: slow jobs:" in p.stdout and "# gloo: slow jobs:" in p.stdout
    assert "# hccl_go: slow beyond the machine (memcpy not slow alike):" in p.stdout
    assert "# hccl_go: slow in the machine's fast cross-CPU state:" in p.stdout
    assert "# slow jobs by their place in the run of 4:" in p.stdout
    assert "ratio = time / hccl_go's time" in p.stdout
    # the side-by-side table over the fast state follows whenever a batch ran in it
    job_rows = [(j["number"], Result.from_json(r)) for j in doc["jobs"] for r in j["results"]]
    fast_table = "over the batches in the machine's fast cross-CPU state, median over 2 jobs" in p.stdout
    assert fast_table == bool(fast_state_job_results(job_rows))
