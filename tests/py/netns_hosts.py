"""Two emulated hosts on this machine: network namespaces joined by one veth pair.

    with two_hosts() as (a, b):          # skips the calling test, saying why, without root
        subprocess.run(a.exec(["python", "job.py"]), env={..., "MASTER_ADDR": a.addr})

Host a has 10.199.1.1 on its end of the veth (va), host b 10.199.1.2 (vb); loopback is
up in both. The link is not shaped. The namespaces share the machine's hostname, boot id
and /dev/shm, so ranks tell the hosts apart by HCCL_GO_HOST_ID only.

Nothing is added to the machine's own namespace: the namespaces carry a random prefix
(hgpy<6 hex>), both ends of the veth live inside them, and 10.199.0.0/16 exists only
there. On the way out (a failed test included) every process still running in them is
killed and the namespaces are deleted, which deletes the veth too.

Hold `flock /tmp/netns.lock` when running these tests beside other namespace tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Host:
    """One emulated host: its namespace, and its address on the veth and that device."""

    ns: str
    addr: str
    ifname: str

    def exec(self, argv: list[str]) -> list[str]:
        """argv run inside this host's namespace."""
        return ["ip", "netns", "exec", self.ns, *argv]

    def pids(self) -> list[int]:
        """The processes running in this host's namespace now."""
        r = _ip("netns", "pids", self.ns)
        return [int(p) for p in r.stdout.split()] if r.returncode == 0 else []

    def kill(self, timeout: float = 10.0) -> list[int]:
        """SIGKILLs every process in the namespace (the host dies) and waits until none is
        left; returns the pids killed."""
        killed = []
        deadline = time.monotonic() + timeout
        while pids := self.pids():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed += [p for p in pids if p not in killed]
            if time.monotonic() > deadline:
                raise TimeoutError(f"processes {pids} in namespace {self.ns} survive SIGKILL")
            time.sleep(0.05)
        return killed


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def two_hosts() -> Iterator[tuple[Host, Host]]:
    """Hosts a and b (see the module's docstring); pytest.skip with the reason when this
    machine cannot build them."""
    if shutil.which("ip") is None:
        pytest.skip("network namespaces: ip (iproute2) not found")
    prefix = "hgpy" + uuid.uuid4().hex[:6]
    a = Host(prefix + "a", "10.199.1.1", "va")
    b = Host(prefix + "b", "10.199.1.2", "vb")
    made: list[Host] = []
    try:
        r = _ip("netns", "add", a.ns)
        if r.returncode != 0:
            pytest.skip(f"network namespaces need root (ip netns add: {r.stderr.strip()})")
        made.append(a)
        for step in (
            ["netns", "add", b.ns],
            ["link", "add", a.ifname, "netns", a.ns, "type", "veth", "peer", "name", b.ifname, "netns", b.ns],
            ["-n", a.ns, "addr", "add", a.addr + "/24", "dev", a.ifname],
            ["-n", b.ns, "addr", "add", b.addr + "/24", "dev", b.ifname],
            ["-n", a.ns, "link", "set", a.ifname, "up"],
            ["-n", b.ns, "link", "set", b.ifname, "up"],
            ["-n", a.ns, "link", "set", "lo", "up"],
            ["-n", b.ns, "link", "set", "lo", "up"],
        ):
            r = _ip(*step)
            if r.returncode != 0:
                pytest.skip(f"network namespaces: set-up refused: ip {' '.join(step)}: {r.stderr.strip()}")
            if step[:2] == ["netns", "add"]:
                made.append(b)
        yield a, b
    finally:
        for host in made:
            # A namespace lives on while a process runs in it: end those first.
            with contextlib.suppress(TimeoutError):
                host.kill()
            _ip("netns", "del", host.ns)
