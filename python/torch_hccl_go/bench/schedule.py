"""Which jobs a --jobs/--peers run consists of, in what order, and how long each may take.

Without --jobs the torch backends share one job (their batches interleaved, as in a plain
run); with --jobs N each backend gets N jobs of its own. Each peer that can run gets N jobs
(one without --jobs); one that cannot is listed with the reason. Jobs go in rounds, one job
of every backend and peer a round, the order rotated by one each round (hccl_go, gloo, mpi;
gloo, mpi, hccl_go; ...), so that the machine's slow and fast phases hit every library
alike and no library always runs right after the same other one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .config import BenchConfig
from .jobs import JobSpec, bench_command
from .peers import PEERS

PER_CASE_S = 60.0  # job time limit: allowance per case beyond its --max-time figures


@dataclass(frozen=True)
class _Unit:
    """What one job of a round runs: a name, its command for a --json path, extra env."""

    name: str
    command: Callable[[str], list[str]]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Schedule:
    specs: list[JobSpec]
    skipped: dict[str, str]  # peer -> why it does not run


def schedule(cfg: BenchConfig, out_dir: str) -> Schedule:
    """The jobs of cfg in running order, each writing its --json into out_dir."""
    units: list[_Unit] = []
    if cfg.jobs is None:
        units.append(_Unit(",".join(cfg.backends), lambda path: bench_command(cfg, path)))
    else:
        for b in cfg.backends:
            units.append(_Unit(b, lambda path, b=b: bench_command(replace(cfg, backends=(b,)), path)))
    skipped = {}
    for name in cfg.peers:
        peer = PEERS[name]
        reason = peer.skip_reason(cfg)
        if reason:
            skipped[name] = reason
        else:
            units.append(_Unit(name, lambda path, peer=peer: peer.command(cfg, path), peer.env(cfg)))
    specs = []
    for number in range(1, (cfg.jobs or 1) + 1):
        for k in range(len(units)):
            unit = units[(number - 1 + k) % len(units)]
            path = os.path.join(out_dir, f"job{len(specs) + 1:03d}-{unit.name.replace(',', '+')}.json")
            specs.append(JobSpec(unit.name, number, tuple(unit.command(path)), path, unit.env))
    return Schedule(specs, skipped)


def job_time_limit(cfg: BenchConfig) -> float:
    """Seconds a job may run before it is killed: generous, only there so that a hung job
    (a peer's shared-memory spin has no timeout) cannot stop the run. Per case: its timed
    and untimed iterations (about 2x --max-time), with --history seven more budgets and
    the idle gaps, plus PER_CASE_S for start-up, the check and long iterations; and the
    collective timeout once."""
    cases = len(cfg.ops) * len(cfg.dtypes) * len(cfg.sizes)
    per_case = PER_CASE_S + cfg.max_time * (9 if cfg.history else 2)
    return cfg.timeout + cases * per_case
