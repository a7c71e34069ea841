"""The rendezvous of one communicator through the c10d Store torch hands us.

Every rank opens its listening socket (hcclGoListen) and publishes its
address and host identity; rank 0 publishes a random job secret for the
connection handshake; then every rank reads everyone's. Only set/get/add
are used, so any Store works (TCPStore, FileStore, PrefixStore).

Keys are unique per group (torch passes a Store already prefixed with the
group's name) and per creation: destroy_process_group + init_process_group
in one process may reuse the same Store, so each creation of a group of
size n takes a fresh generation from a counter that every member bumps once
(init is collective, so each generation adds exactly n).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import dataclass

from . import _C


@dataclass
class Peers:
    listener: int  # hcclGoListener_t, consumed by the communicator
    addrs: list[str]
    host_ids: list[str]
    secret: str


def host_id() -> str:
    """What identifies this host for shared memory: HCCL_GO_HOST_ID if set,
    else hostname, boot id and the device of /dev/shm (so network namespaces
    or containers with their own /dev/shm count as other hosts)."""
    override = os.environ.get("HCCL_GO_HOST_ID", "").strip()
    if override:
        return override
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = "-"
    try:
        st = os.stat("/dev/shm")
        shm_dev = f"{st.st_dev}:{st.st_ino}"  # as topo.LocalIdentity (Go) writes it
    except OSError:
        shm_dev = "-"
    return f"{socket.gethostname()}/{boot_id}/{shm_dev}"


def _generation(store, size: int) -> int:
    count = store.add(f"hccl_go/initcount/{size}", 1)
    return (count - 1) // size


def exchange(store, rank: int, size: int, listen_addr: str = "") -> Peers:
    """Publishes this rank's address and host id and returns everyone's."""
    prefix = f"hccl_go/{size}/{_generation(store, size)}/"
    listener, addr = _C.listen(listen_addr)
    try:
        if rank == 0:
            store.set(prefix + "secret", secrets.token_hex(32))
        store.set(prefix + f"rank/{rank}", json.dumps({"addr": addr, "host": host_id()}))
        addrs, hosts = [], []
        for r in range(size):
            entry = json.loads(store.get(prefix + f"rank/{r}"))
            addrs.append(entry["addr"])
            hosts.append(entry["host"])
        secret = store.get(prefix + "secret").decode()
    except BaseException:
        _C.listener_close(listener)
        raise
    return Peers(listener, addrs, hosts, secret)
