"""pytest set-up for the backend tests: names the backend under test in the report header;
the two_hosts fixture (netns_hosts.py)."""

from __future__ import annotations

import importlib.util

import netns_hosts
import pytest
from harness import BACKEND


def pytest_report_header(config):
    return f"hccl-go tests: backend under test = {BACKEND!r} (set HCCL_GO_TEST_BACKEND to change)"


@pytest.fixture(scope="session", autouse=True)
def _backend_is_installed():
    """Fail fast, with the fix, when the backend under test cannot be imported."""
    if BACKEND == "hccl_go" and importlib.util.find_spec("torch_hccl_go") is None:
        pytest.exit(
            "torch_hccl_go is not installed: run ./scripts/setup.sh "
            "(or set HCCL_GO_TEST_BACKEND=gloo to check the tests against gloo)",
            returncode=1,
        )


@pytest.fixture
def two_hosts():
    """Two emulated hosts (netns_hosts.py), removed after the test; skips, saying why,
    where this machine cannot build them."""
    with netns_hosts.two_hosts() as hosts:
        yield hosts
