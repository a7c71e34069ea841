"""Subgroups, async work and futures, object collectives, bad input, destroy and re-init.

All checks run in one spawned job at world size 3 (semantics_checks.py); each test
below reports one of them, also when a later check hangs the job.
"""

from __future__ import annotations

import pytest
from harness import assert_check_passed
from semantics_checks import CHECKS, semantics_job

WORLD = 3


@pytest.mark.parametrize("check", [c.__name__ for c in CHECKS])
def test_semantics(check: str) -> None:
    values = assert_check_passed(semantics_job, WORLD, check, timeout=120)
    if check in ("check_bad_inputs", "check_listen_options"):  # show the messages users would see
        print("\n".join(values[0]))
