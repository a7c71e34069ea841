"""Jobs confined to cpusets of 1, 2 and more CPUs (taskset around torchrun): every collective
stays correct with what a training step does between them, and the library sizes itself for
the CPUs it may use (GOMAXPROCS), whether the ranks outnumber the CPUs or not."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from harness import free_port

HERE = Path(__file__).resolve().parent
CPUS = sorted(os.sched_getaffinity(0))


def run_in_cpuset(cpus: list[int], nproc: int) -> list[dict]:
    import subprocess

    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) is not installed")
    cmd = [
        "taskset", "-c", ",".join(map(str, cpus)),
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={nproc}",
        "--master_addr=127.0.0.1", f"--master_port={free_port()}",
        str(HERE / "cpuset_worker.py"),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the job in cpuset {cpus} exited with {proc.returncode}:\n{out[-4000:]}"
    lines = [line for line in proc.stdout.splitlines() if line.startswith("cpuset-result: ")]
    assert len(lines) == 1, out[-4000:]
    return json.loads(lines[0].split(": ", 1)[1])


CASES = [  # (CPUs in the cpuset, 0: every CPU the tests may use and more than 2; ranks)
    pytest.param(1, 2, id="1 cpu, 2 ranks"),
    pytest.param(2, 2, id="2 cpus, 2 ranks"),
    pytest.param(2, 3, id="2 cpus, 3 ranks"),
    pytest.param(0, 2, id="every cpu, 2 ranks"),
]


@pytest.mark.parametrize("ncpus,nproc", CASES)
def test_collectives_in_a_cpuset(ncpus: int, nproc: int) -> None:
    if len(CPUS) < max(ncpus, 3 if ncpus == 0 else 1):
        pytest.skip(f"the tests may use {len(CPUS)} CPUs; this case needs {ncpus or 'more than 2'}")
    cpus = CPUS[:ncpus] if ncpus else CPUS
    ranks = run_in_cpuset(cpus, nproc)
    assert len(ranks) == nproc
    for rank, r in enumerate(ranks):
        assert r["failed"] == [], f"rank {rank} in cpuset {cpus}: {r['failed']}"
        assert r["cpus"] == cpus, f"rank {rank} ran on {r['cpus']}, not the cpuset {cpus}"
        # GOMAXPROCS under auto: at least 2 and the CPUs of the cpuset left to each rank,
        # and not sized for CPUs outside the cpuset (the calling threads + 1 may add a few).
        if os.environ.get("HCCL_GO_MAXPROCS", "auto") in ("", "auto"):
            assert r["gomaxprocs"] >= max(2, len(cpus) // nproc), r
            assert r["gomaxprocs"] <= max(len(cpus) // nproc, 4), r
