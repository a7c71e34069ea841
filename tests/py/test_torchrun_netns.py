"""torchrun across two emulated hosts: `torchrun --nnodes 2 --nproc-per-node 2
--rdzv-backend c10d` in each of two network namespaces (netns_hosts.py), ranks 0,1 on the
first and 2,3 on the second, with no hccl_go setting but HCCL_GO_HOST_ID.

- every collective, over the default group, against a local reference on random data
  (float32, float16, bfloat16, int64; 0, 1, 7, 999 elements, 1 MiB; 9 MiB for float32 and
  bfloat16), with the results that must agree bitwise alike on every rank; barrier,
  object collectives and subgroups spanning both hosts; DDP ends with the same parameters on every rank, equal to a
  single-process reference (torchrun_netns_worker.py, one job for all of these);
- a dead host: while the ranks run all_reduces, every process of the second namespace is
  killed (its connections close), or its link goes down first (nothing more arrives from
  it); torchrun on the first host ends, and each survivor's error names a dead rank, no
  later than the group's timeout after the kill.

What torchrun needs across namespaces, which share the hostname: `--local-addr` (each
agent's address; rank 0's becomes the workers' MASTER_ADDR, else the hostname, which
resolves to loopback) and `--rdzv-conf is_host=1` on the first host (the rendezvous
endpoint is not this machine's hostname, so torchrun would not host the store there).
gloo, used for the cross-rank comparisons, needs GLOO_SOCKET_IFNAME.

The namespaces need root; without it the tests skip and say why. Hold
`flock /tmp/netns.lock` when running them beside other namespace tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import netns_hosts
import pytest
from collective_matrix import COLLECTIVES
from harness import BACKEND
from reference import backend_supports, dtype_name
from torchrun_netns_worker import DDP_CHECKED, DEAD_HOST_TIMEOUT, MATRIX_DTYPES, READY_AFTER

WORKER = Path(__file__).with_name("torchrun_netns_worker.py")
CHECKS_TIMEOUT = 240.0  # the checks job took 40-120 s on the two shared cores
MAX_SHOWN = 20


@pytest.fixture(scope="module")
def hosts():
    with netns_hosts.two_hosts() as pair:
        yield pair


def torchrun(hosts, phase: str, out: Path, port: int) -> list[tuple[subprocess.Popen, Path]]:
    """Starts torchrun (2 processes) on each host; returns (process, log file) per host."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCCL_GO_")}
    # TMPDIR: torchrun's files and hccl_go's flight-recorder dumps stay in the test's directory.
    env.update(BACKEND=BACKEND, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", TMPDIR=str(out))
    started = []
    for i, host in enumerate(hosts):
        argv = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes", "2", "--nproc-per-node", "2", "--max-restarts", "0",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{hosts[0].addr}:{port}", "--rdzv-id", phase,
            "--rdzv-conf", f"is_host={int(i == 0)},join_timeout=60",
            "--local-addr", host.addr,
            str(WORKER), phase, str(out),
        ]  # fmt: skip
        host_env = dict(env, HCCL_GO_HOST_ID=f"emulated-{host.ns}", GLOO_SOCKET_IFNAME=host.ifname)
        log = out / f"torchrun-{phase}-{host.ns}.log"
        with log.open("w") as f:
            proc = subprocess.Popen(host.exec(argv), env=host_env, stdout=f, stderr=subprocess.STDOUT, cwd=out)
        started.append((proc, log))
    return started


def wait(started, hosts, timeout: float) -> list[int | None]:
    """Exit codes of the torchrun processes; None for those still running after timeout,
    which are killed then with everything else on their host."""
    deadline = time.monotonic() + timeout
    codes: list[int | None] = []
    for (proc, _), host in zip(started, hosts, strict=True):
        try:
            codes.append(proc.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
            host.kill()
            proc.wait(timeout=10)
    return codes


def logs(started, out: Path) -> str:
    """The end of every torchrun log and the step each rank was in, for failure messages."""
    parts = []
    for _, log in started:
        parts.append(f"--- {log.name}:\n{log.read_text(errors='replace')[-3000:]}")
    for p in sorted(out.glob("progress-rank*")):
        parts.append(f"--- {p.name}: {p.read_text()}")
    return "\n".join(parts)


def results(out: Path, phase: str, ranks) -> dict[int, dict]:
    """{rank: what it wrote} for the ranks that wrote their result of phase."""
    files = {r: out / f"{phase}-rank{r}.json" for r in ranks}
    return {r: json.loads(f.read_text()) for r, f in files.items() if f.exists()}


@pytest.fixture(scope="module")
def checks_job(hosts, tmp_path_factory):
    """The checks job, run once: {rank: its result (torchrun_netns_worker.checks)}."""
    out = tmp_path_factory.mktemp("torchrun-checks")
    started = torchrun(hosts, "checks", out, port=29400)
    t0 = time.monotonic()
    codes = wait(started, hosts, CHECKS_TIMEOUT)
    took = time.monotonic() - t0
    per_rank = results(out, "checks", range(4))
    print(f"\ntorchrun checks job across two namespaces: {took:.1f} s, exit codes {codes}")
    if codes != [0, 0] or sorted(per_rank) != [0, 1, 2, 3]:
        why = "did not finish in time" if None in codes else f"exited with {codes}"
        ranks = sorted(per_rank)
        pytest.fail(f"the torchrun jobs {why}; ranks with results: {ranks}\n{logs(started, out)}", pytrace=False)
    for r, res in per_rank.items():
        if "crashed" in res:
            pytest.fail(f"rank {r} crashed:\n{res['crashed']}", pytrace=False)
    return per_rank


def test_ranks_on_both_hosts(checks_job, hosts) -> None:
    """torchrun places ranks 0,1 on the first host and 2,3 on the second; with hccl_go they
    talk shared memory inside a host (the arena) and TCP across."""
    host_of = [checks_job[r]["host"] for r in range(4)]
    assert host_of == [f"emulated-{hosts[0].ns}"] * 2 + [f"emulated-{hosts[1].ns}"] * 2
    if BACKEND == "hccl_go":
        transports = [checks_job[r]["info"]["transports"] for r in range(4)]
        assert transports == [
            ["self", "shm+arena", "tcp", "tcp"],
            ["shm+arena", "self", "tcp", "tcp"],
            ["tcp", "tcp", "self", "shm+arena"],
            ["tcp", "tcp", "shm+arena", "self"],
        ]
    times = ", ".join(f"{k} {v:.1f} s" for k, v in checks_job[0]["seconds"].items())
    print(f"\nrank 0: init {checks_job[0]['init_s']:.1f} s; {checks_job[0]['cases']} matrix cases; {times}")


def failures_of(checks_job, name: str) -> list[str]:
    return sorted({msg for res in checks_job.values() for msg in res["failures"].get(name, [])})


@pytest.mark.parametrize("dtype", MATRIX_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("coll", COLLECTIVES)
def test_collective_across_hosts(checks_job, coll, dtype) -> None:
    if not backend_supports(BACKEND, dtype):
        pytest.skip(f"{BACKEND} does not support {dtype_name(dtype)}")
    failures = failures_of(checks_job, f"{coll} {dtype_name(dtype)}")
    if failures:
        shown = "\n".join(failures[:MAX_SHOWN])
        pytest.fail(f"{len(failures)} failures of {coll} {dtype_name(dtype)} across hosts:\n{shown}", pytrace=False)


@pytest.mark.parametrize("check", ["barrier", "object collectives", "subgroups across hosts"])
def test_group_checks_across_hosts(checks_job, check) -> None:
    assert all(check in res["failures"] for res in checks_job.values()), f"{check} did not run on every rank"
    failures = failures_of(checks_job, check)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("variant", DDP_CHECKED)
def test_ddp_across_hosts(checks_job, variant) -> None:
    """DDP's parameters end bitwise alike on every rank and equal to the single-process
    reference trained on the global batch."""
    name = f"ddp {variant}"
    assert all(name in res["failures"] for res in checks_job.values()), f"{name} did not run on every rank"
    failures = failures_of(checks_job, name)
    assert not failures, "\n".join(failures)


def named_ranks(error: str) -> set[int]:
    """The ranks an hccl_go error names: "rank 2", "ranks [2 3]"."""
    named = {int(r) for r in re.findall(r"\brank (\d+)", error)}
    for group in re.findall(r"\branks \[([\d ]+)\]", error):
        named |= {int(r) for r in group.split()}
    return named


@pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's errors name the ranks they lost")
@pytest.mark.parametrize("how", ["killed", "unplugged"])
def test_dead_host_named_in_survivors_errors(hosts, tmp_path, how) -> None:
    """The second host dies while every rank runs all_reduces: its processes are killed
    ("killed": their connections close), or its link goes down first ("unplugged": nothing
    more arrives from it, only the timeout can tell). torchrun on the first host ends, and
    each survivor's error names a dead rank, no later than the group's timeout after the
    kill. (The survivors are ranks 0 and 1: only they write a result.)"""
    started = torchrun(hosts, "dead-host", tmp_path, port=29401 if how == "killed" else 29402)
    try:
        ready = [tmp_path / f"ready-rank{r}" for r in range(4)]
        deadline = time.monotonic() + 90
        while not all(p.exists() for p in ready):
            if time.monotonic() > deadline or any(proc.poll() is not None for proc, _ in started):
                pytest.fail(f"the ranks never ran {READY_AFTER} all_reduces:\n{logs(started, tmp_path)}", pytrace=False)
            time.sleep(0.1)
        killed_at = time.time()
        if how == "unplugged":
            subprocess.run(["ip", "-n", hosts[1].ns, "link", "set", hosts[1].ifname, "down"], check=True, timeout=30)
        hosts[1].kill()
        codes = wait(started[:1], hosts[:1], DEAD_HOST_TIMEOUT.total_seconds() + 30)
    finally:
        for host in hosts:
            host.kill()
        subprocess.run(["ip", "-n", hosts[1].ns, "link", "set", hosts[1].ifname, "up"], timeout=30)
    survivors = results(tmp_path, "dead-host", range(4))
    assert codes[0] is not None, f"the survivors hung after the kill:\n{logs(started, tmp_path)}"
    assert codes[0] != 0, f"torchrun on the surviving host exited 0:\n{logs(started, tmp_path)}"
    assert sorted(survivors) == [0, 1], f"results from ranks {sorted(survivors)}:\n{logs(started, tmp_path)}"
    for r, res in survivors.items():
        assert res.get("error"), f"rank {r} saw no error: {res}"
        assert named_ranks(res["error"]) & {2, 3}, f"rank {r}'s error names neither dead rank: {res['error']}"
        after = res["error_at"] - killed_at
        print(f"\nrank {r} failed {after:.2f} s after the kill: {res['error'][:300]}")
        # The op's timeout runs from its start, before the kill; the slack is for a loaded machine.
        assert after < DEAD_HOST_TIMEOUT.total_seconds() + 5, f"rank {r} failed {after:.1f} s after the kill"
