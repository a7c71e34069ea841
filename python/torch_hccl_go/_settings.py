"""The HCCL_GO_* settings, for `python -m torch_hccl_go.info`.

The library's own variables mirror pgbackend/config.go (Vars): keep the two
in step. HCCL_GO_HOST_ID is read here, by the rendezvous.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    env: str
    default: str
    doc: str


SETTINGS = [
    Setting("HCCL_GO_TIMEOUT_MS", "1800000", "Timeout of every operation in ms (the process group's timeout overrides it)."),
    Setting("HCCL_GO_CONNECT_TIMEOUT_MS", "120000", "Timeout of connection set-up at init in ms."),
    Setting("HCCL_GO_ALGO", "", "Algorithm override: ring, rd, hd (all_reduce), or per op allreduce=ring,broadcast=tree."),
    Setting("HCCL_GO_TRANSPORT", "auto", "auto (shared memory within a host, TCP across), shm, or tcp."),
    Setting("HCCL_GO_SOCKET_IFNAME", "", "Network interface to listen on (default: loopback for single-host jobs)."),
    Setting("HCCL_GO_STREAMS_PER_PEER", "1", "TCP connections per peer; large messages are striped across them."),
    Setting("HCCL_GO_CHUNK_BYTES", "0", "Pipelining chunk of ring/chain algorithms in bytes (0: the library's default)."),
    Setting("HCCL_GO_DEBUG", "WARN", "Log level: WARN or INFO."),
    Setting("HCCL_GO_HOST_ID", "hostname/boot_id/dev of /dev/shm", "Host identity for shared memory (read by torch_hccl_go)."),
]


def in_force() -> list[tuple[Setting, str | None]]:
    """Each known setting with its value in the environment (None: unset)."""
    return [(s, os.environ.get(s.env)) for s in SETTINGS]


# Variables of the build and test scripts, not of the library.
_TOOLING = ("HCCL_GO_TEST_", "HCCL_GO_PREBUILT_LIB", "HCCL_GO_FORCE_REBUILD")


def unknown() -> dict[str, str]:
    """HCCL_GO_* variables set in the environment that no setting reads (typos?)."""
    known = {s.env for s in SETTINGS}
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith("HCCL_GO_") and k not in known and not k.startswith(_TOOLING)
    }
