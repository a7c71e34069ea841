"""A process's sockets, descriptors, threads and memory, from /proc/self (as scale_rank.c counts them)."""

from __future__ import annotations

import os


def _field(path: str, key: str) -> int:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def usage() -> dict:
    fds = sockets = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        fds += 1
        sockets += target.startswith("socket:")
    status = "/proc/self/status"
    return {
        "sockets": sockets,
        "fds": fds,
        "threads": _field(status, "Threads"),
        "rss_kb": _field(status, "VmRSS"),
        "anon_kb": _field(status, "RssAnon"),
        "shmem_kb": _field(status, "RssShmem"),
        "pss_kb": _field("/proc/self/smaps_rollup", "Pss"),
    }
