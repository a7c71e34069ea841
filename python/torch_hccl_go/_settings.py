"""The HCCL_GO_* settings, for `python -m torch_hccl_go.info`.

The library's own variables come from the library itself (pgbackend.Vars
through hcclGoGetConfig); HCCL_GO_HOST_ID and HCCL_GO_JOB_SECRET are read here, by the rendezvous.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    env: str
    default: str
    doc: str
    secret: bool = False  # info shows whether it is set, never its value


def _library_settings() -> list[Setting]:
    """The library's own settings, as it reports them (hcclGoGetConfig)."""
    import ctypes
    import json

    from ._library import library_path

    lib = ctypes.CDLL(library_path())  # the copy already loaded: one Go runtime
    buf = ctypes.create_string_buffer(1 << 16)
    if lib.hcclGoGetConfig(buf, ctypes.c_size_t(len(buf))) != 0:
        return []
    return [Setting(d["env"], d["default"], d["doc"]) for d in json.loads(buf.value.decode())]


SETTINGS = _library_settings() + [
    Setting(
        "HCCL_GO_HOST_ID",
        "hostname/boot_id/dev:ino of /dev/shm",
        "Host identity for shared memory (read by torch_hccl_go).",
    ),
    Setting(
        "HCCL_GO_JOB_SECRET",
        "",
        "The job secret every connection's handshake proves, set by the launcher to the same value on every rank; "
        "unset: rank 0 makes a random one and hands it out through the rendezvous store (read by torch_hccl_go and "
        "by hcclGoCommInitRank when its secret is NULL).",
        secret=True,
    ),
    Setting(
        "HCCL_GO_MAXPROCS",
        "auto",
        "Go runtime's GOMAXPROCS: auto, from the first communicator's init, is the larger of cores / ranks "
        "on this host and the live threads that have called into the library + 1 (2 to 32), following "
        "them as they come and go; n sets n; "
        "0 leaves Go's default.",
    ),
    Setting(
        "HCCL_GO_REFRESH_MS",
        "2",
        "How often each thread that calls into the library lets its Go processor through the Go scheduler, "
        "so that the runtime does not take it for stuck; 0: never.",
    ),
    Setting(
        "HCCL_GO_STREAM",
        "default",
        "The stream a group's collectives go to unless Options(stream=...) says otherwise: default, high, "
        "or an index below HCCL_GO_STREAMS (read by torch_hccl_go).",
    ),
    Setting(
        "HCCL_GO_TORCH_FLIGHT_RECORDER",
        "0",
        "1: let torch hook its own flight recorder onto hccl_go groups as well (about 3 us per op); "
        "0: only hccl_go's own (HCCL_GO_TRACE_SIZE).",
    ),
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
