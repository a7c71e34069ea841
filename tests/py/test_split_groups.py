"""Groups as splits of the default group: new_group (members in any order, non-members
calling too), new_subgroups, split_group, a 2-D device mesh with FSDP over one dimension,
the collective matrix on a split, the cost of each extra group, and bad input.

All checks run in one spawned job at world size 4 (split_checks.py); each test below
reports one of them, also when a later check hangs the job.
"""

from __future__ import annotations

import pytest
from harness import BACKEND, assert_check_passed
from split_checks import CHECKS, WORLD, split_job

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="splits are hccl_go's")


@pytest.mark.parametrize("check", [c.__name__ for c in CHECKS])
def test_split_groups(check: str) -> None:
    values = assert_check_passed(split_job, WORLD, check, timeout=600)
    if values[0]:
        print(values)
