"""The benchmark's --peers: a peer that is not installed is skipped with its reason; which
cases each peer takes; short real runs of Open MPI (when mpirun and mpi4py are here) and
DeepSpeed (when it is importable; CI does not install it)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest
from bench_cli import load, output, run_bench
from torch_hccl_go.bench import history
from torch_hccl_go.bench.config import PEER_NAMES, parse_args
from torch_hccl_go.bench.peers import PEERS
from torch_hccl_go.bench.peers import deepspeed as deepspeed_peer
from torch_hccl_go.bench.peers import mpi as mpi_peer


def mpi_missing() -> str | None:
    return PEERS["mpi"].skip_reason(parse_args([]))


def test_peers_are_the_ones_the_command_line_offers():
    assert tuple(PEERS) == PEER_NAMES


@pytest.mark.parametrize(
    "args, want",
    [
        (["--ops", "broadcast"], "inference_all_reduce is an all_reduce"),
        (["--redop", "max"], "inference_all_reduce sums"),
        (["--dtypes", "int32"], "its shm kernel reduces float32"),
        ([], None),
    ],
)
def test_deepspeed_takes_sum_all_reduce_of_float_types_only(args, want, monkeypatch):
    monkeypatch.setattr(deepspeed_peer, "installed", lambda: True)
    reason = PEERS["deepspeed"].skip_reason(parse_args(args))
    assert (reason is None) if want is None else (want in reason)


def test_deepspeed_job_asks_only_for_its_cases():
    cfg = parse_args(
        ["--ops", "all_reduce,broadcast", "--dtypes", "float32,int32", "--jobs", "2", "--peers", "deepspeed"]
    )
    argv = PEERS["deepspeed"].command(cfg, "/tmp/x.json")
    job = parse_args(argv[argv.index("torch_hccl_go.bench") + 1 :])
    assert (job.backends, job.ops, job.dtypes, job.jobs, job.peers) == (
        ("deepspeed",),
        ("all_reduce",),
        ("float32",),
        None,
        (),
    )


def test_deepspeed_not_installed_is_a_skip_with_the_install_line(monkeypatch):
    monkeypatch.setattr(deepspeed_peer, "installed", lambda: False)
    assert "pip install deepspeed" in PEERS["deepspeed"].skip_reason(parse_args([]))


def test_mpi_without_mpirun_is_a_skip_with_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = PEERS["mpi"].skip_reason(parse_args([]))
    assert "mpirun is not installed" in reason and "scripts/mpi_bench.sh" in reason


def test_mpi_job_runs_the_program_under_mpirun_over_shared_memory():
    cfg = parse_args(["--ops", "all_reduce,reduce,all_gather", "--sizes", "8,1K", "-n", "3", "--history"])
    argv = PEERS["mpi"].command(cfg, "/tmp/m.json")
    assert argv[:5] == ["mpirun", "-n", "3", "--bind-to", "none"]
    assert "self,vader" in argv and str(mpi_peer.PROGRAM) in argv
    program = argv[argv.index(str(mpi_peer.PROGRAM)) + 1 :]
    assert program[program.index("--ops") + 1] == "all_reduce,reduce,all_gather"
    assert program[program.index("--sizes") + 1] == "8,1024"
    assert "--history" in program and program[-2:] == ["--json", "/tmp/m.json"]
    # The program reduces with sum only: with another redop only the data movers remain.
    cfg = parse_args(["--ops", "all_reduce,reduce,reduce_scatter,all_gather,all_to_all", "--redop", "max"])
    argv = PEERS["mpi"].command(cfg, "/tmp/m.json")
    assert argv[argv.index("--ops") + 1] == "all_gather,all_to_all"


def test_peer_not_installed_is_skipped_and_the_run_goes_on(tmp_path):
    """With no mpirun on PATH the run says so in one line and times the backends."""
    out = tmp_path / "bench.json"
    p = run_bench(
        ["--sizes", "8", "--max-time", "0.05", "--peers", "mpi", "--json", str(out)],
        timeout=400,
        env={"PATH": str(tmp_path)},
    )
    assert p.returncode == 0, output(p)
    assert "# mpi: skipped: mpirun is not installed" in p.stdout
    doc = load(out)
    assert doc["skipped"]["mpi"].startswith("mpirun is not installed")
    assert [j["name"] for j in doc["jobs"]] == ["hccl_go,gloo"]
    assert {r["backend"] for r in doc["summary"]} == {"hccl_go", "gloo"}


def test_mpi_program_loads_the_bench_rules_without_torch():
    """It imports timing, history, results, report, sizes and counts from the package's
    folder, not torch_hccl_go itself (which loads torch and starts the Go runtime)."""
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (scripts/mpi_bench.sh installs it)")
    code = (
        "import runpy, sys\n"
        f"g = runpy.run_path({str(mpi_peer.PROGRAM)!r}, run_name='not_main')\n"
        "assert g['timing'].settle and g['history'].CONDITIONS\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"


def test_mpi_peer_short_run(tmp_path):
    """Open MPI in the same tables, its figures timed by the same rules, every result checked."""
    if reason := mpi_missing():
        pytest.skip(f"mpi peer: {reason}")
    out = tmp_path / "bench.json"
    ops = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "reduce"]
    # 8 B: one element per rank's share; 80 B: shares of 10 elements, beyond the pattern's period of 7.
    args = ["--ops", ",".join(ops), "--sizes", "8,80", "--max-time", "0.05", "--root", "1"]
    p = run_bench([*args, "--backends", "hccl_go", "--peers", "mpi", "--history", "--json", str(out)], timeout=600)
    assert p.returncode == 0, output(p)
    doc = load(out)
    mpi = [r for r in doc["summary"] if r["backend"] == "mpi"]
    assert {(r["op"], r["size"]) for r in mpi} == {(op, size) for op in ops for size in (8, 80)}
    for r in mpi:
        assert r["status"] == "ok" and r["wrong"] == 0, r
        assert r["rewarm_iters"] == 0  # a summary row; the job's own row has the plan
    (job,) = [j for j in doc["jobs"] if j["name"] == "mpi"]
    for r in job["results"]:
        assert 1 <= r["rewarm_iters"] <= r["iters_per_batch"] and len(r["batch_times_us"]) >= 3, r
        # every condition and the floor after it (history.py)
        conditions = [c.name for c in history.CONDITIONS]
        assert sorted(r["history_us"]) == sorted(conditions + [history.floor_key(c) for c in conditions]), r
        assert r["memcpy_us"] > 0, r  # the machine's pace, as the torch sweep times it
        # the cross-CPU state around every batch, as the torch sweep reads it
        assert len(r["handoff_ns"]) == len(r["batch_times_us"]) + 1 and all(x > 0 for x in r["handoff_ns"]), r
    # every op in the side-by-side table with a figure of both
    table = p.stdout[p.stdout.index("# reduce  float32  world 2: median time") :]
    assert "-" not in table.splitlines()[3].split()[-2:], table[:1000]


def test_deepspeed_peer_short_run(tmp_path):
    """DeepSpeed's inference_all_reduce in the same table (its shm op compiles on first use)."""
    if not deepspeed_peer.installed():
        pytest.skip("deepspeed is not importable (pip install deepspeed==0.19.8 ninja; CI does not install it)")
    if shutil.which("ninja") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "ninja")):
        pytest.skip("ninja is not installed: deepspeed cannot build its shm op")
    out = tmp_path / "bench.json"
    args = ["--ops", "all_reduce,broadcast", "--sizes", "8,4K", "--max-time", "0.05", "--backends", "hccl_go"]
    p = run_bench([*args, "--peers", "deepspeed", "--json", str(out)], timeout=600)
    assert p.returncode == 0, output(p)
    doc = load(out)
    (job,) = [j for j in doc["jobs"] if j["name"] == "deepspeed"]
    assert {(r["op"], r["size"]) for r in job["results"]} == {("all_reduce", 8), ("all_reduce", 4096)}
    info = job["backend_info"]["deepspeed"]
    for r in job["results"]:
        if info["shm_kernel_level"] is None:  # no kernel here: n/a, never gloo under its name
            assert r["status"] == "n/a" and "shm kernel" in r["reason"], r
        else:
            assert r["status"] == "ok" and r["wrong"] == 0, r
    assert info["shm_kernel_level"] is None or info["shm_segment_removed"], info
