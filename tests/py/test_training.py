"""DDP and FSDP on the backend under test, at world size 2 (training_checks.py).

One spawned job trains every DDP variant (20 steps, on the backend under test and
on gloo), another every FSDP variant (5 steps); each test reports one variant.
"""

from __future__ import annotations

import pytest

from harness import RankFailure, run_ranks
from training_checks import DDP_VARIANTS, FSDP_VARIANTS, ddp_job, fsdp_job

WORLD = 2
_results: dict = {}


def job_results(job):
    name = job.__name__
    if name not in _results:
        try:
            _results[name] = run_ranks(job, WORLD, timeout=300)
        except RankFailure as e:
            _results[name] = e
    value = _results[name]
    if isinstance(value, RankFailure):
        pytest.fail(f"{name} failed:\n{value}", pytrace=False)
    return value


def report(per_rank, variant: str) -> None:
    failed = [(r, res[variant][1]) for r, res in enumerate(per_rank) if res[variant][0] != "ok"]
    if failed:
        pytest.fail("\n".join(f"--- rank {r}:\n{tb}" for r, tb in failed), pytrace=False)


@pytest.mark.parametrize("variant", [v.name for v in DDP_VARIANTS])
def test_ddp(variant: str) -> None:
    report(job_results(ddp_job), variant)


@pytest.mark.parametrize("variant", list(FSDP_VARIANTS))
def test_fsdp(variant: str) -> None:
    report(job_results(fsdp_job), variant)
