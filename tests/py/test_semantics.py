"""Subgroups, async work and futures, object collectives, bad input, destroy and re-init.

All checks run in one spawned job at world size 3 (semantics_checks.py); each test
below reports one of them.
"""

from __future__ import annotations

import pytest

from harness import RankFailure, run_ranks
from semantics_checks import CHECKS, semantics_job

WORLD = 3
_result: dict = {}


def job_results():
    if "value" not in _result:
        try:
            _result["value"] = run_ranks(semantics_job, WORLD, timeout=240)
        except RankFailure as e:
            _result["value"] = e
    value = _result["value"]
    if isinstance(value, RankFailure):
        pytest.fail(f"the semantics job failed:\n{value}", pytrace=False)
    return value


@pytest.mark.parametrize("check", [c.__name__ for c in CHECKS])
def test_semantics(check: str) -> None:
    per_rank = job_results()
    failed = [(r, res[check][1]) for r, res in enumerate(per_rank) if res[check][0] != "ok"]
    if failed:
        pytest.fail("\n".join(f"--- rank {r}:\n{tb}" for r, tb in failed), pytrace=False)
    if check == "check_bad_inputs":  # show the messages users would see
        print("\n".join(per_rank[0][check][1]))
