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


@pytest.mark.parametrize(
    ("env", "fields", "want"),
    [
        (None, {}, "on"),
        ("auto", {}, "on"),
        ("1", {}, "on"),
        ("0", {}, "off"),
        ("1", {"split_groups": False}, "off"),
        ("0", {"split_groups": True}, "on"),
        (None, {"extra": {"split_groups": "0"}}, "off"),
    ],
)
def test_split_setting(monkeypatch, env, fields, want) -> None:
    """HCCL_GO_SPLIT_GROUPS, overridden by Options(split_groups=...) (or its extra key)."""
    from torch_hccl_go import Options
    from torch_hccl_go._creator import _split_mode

    if env is None:
        monkeypatch.delenv("HCCL_GO_SPLIT_GROUPS", raising=False)
    else:
        monkeypatch.setenv("HCCL_GO_SPLIT_GROUPS", env)
    assert _split_mode(Options(**fields)) == want


@pytest.mark.parametrize("field", ["transport", "socket_ifname", "listen_addr", "streams_per_peer", None])
def test_link_options_connect_anew(field) -> None:
    """A group whose Options concern its own links is never a split; other options are."""
    from torch_hccl_go import Options
    from torch_hccl_go._creator import _split_parent, _wants_own_links

    if field is None:
        assert not _wants_own_links(Options(algo="ring", timeout=None))
        assert _split_parent([0, 1], 2, Options()) is None  # torch has no default group here
        return
    value = 2 if field == "streams_per_peer" else "x"
    assert _wants_own_links(Options(**{field: value}))
    assert _wants_own_links(Options(extra={field: str(value)}))
