"""The rendezvous of one communicator through the c10d Store torch hands us.

Two rounds. First every rank publishes its host identity and reads
everyone's; then it opens its listening socket (hcclGoListenRank), which
needs them: ranks that all share one host listen on loopback, ranks that
span hosts on the address of the route to the store's host (see
pgbackend/listen.go), and publishes the address; rank 0 publishes a random
job secret for the connection handshake. Only set/get/add are used, so any
Store works (TCPStore, FileStore, PrefixStore).

Keys are unique per group (torch passes a Store already prefixed with the
group's name) and per creation: destroy_process_group + init_process_group
in one process may reuse the same Store, so each creation of a group of
size n takes a fresh generation from a counter that every member bumps once
(init is collective, so each generation adds exactly n).
"""

from __future__ import annotations

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


def store_host(store) -> str:
    """The host this rank reaches the rendezvous store at: the TCPStore's host
    under any PrefixStores, else MASTER_ADDR, else "" (a FileStore)."""
    host = None
    try:
        for _ in range(16):  # PrefixStores nest once per group level
            inner = getattr(store, "underlying_store", None)
            if inner is None:
                break
            store = inner
        host = getattr(store, "host", None)
    except Exception:  # noqa: BLE001 - a Store of another kind: fall back to MASTER_ADDR
        host = None
    if not isinstance(host, str) or not host:
        host = os.environ.get("MASTER_ADDR", "")
    return host.strip().removeprefix("[").removesuffix("]")


def _generation(store, size: int) -> int:
    count = store.add(f"hccl_go/initcount/{size}", 1)
    return (count - 1) // size


def _gather(store, prefix: str, rank: int, size: int, value: str) -> list[str]:
    """Publishes value under prefix for this rank and returns every rank's."""
    store.set(f"{prefix}{rank}", value)
    return [store.get(f"{prefix}{r}").decode() for r in range(size)]


def exchange(store, rank: int, size: int, options: str) -> Peers:
    """Publishes this rank's host id, then its listening address, and returns
    everyone's. options is the group's options string (listen_addr,
    socket_ifname, ... over the HCCL_GO_* variables)."""
    prefix = f"hccl_go/{size}/{_generation(store, size)}/"
    hosts = _gather(store, prefix + "host/", rank, size, host_id())
    listener, addr = _C.listen_rank(rank, hosts, store_host(store), options)
    try:
        if rank == 0:
            store.set(prefix + "secret", secrets.token_hex(32))
        addrs = _gather(store, prefix + "addr/", rank, size, addr)
        secret = store.get(prefix + "secret").decode()
    except BaseException:
        _C.listener_close(listener)
        raise
    return Peers(listener, addrs, hosts, secret)
