"""The rendezvous of one communicator through the c10d Store torch hands us.

Two rounds. First every rank publishes its host identity and reads
everyone's; then it opens its listening socket (hcclGoListenRank), which
needs them: ranks that all share one host listen on loopback, ranks that
span hosts on the address of the route to the store's host (see
pgbackend/listen.go), and publishes the address. The job secret that every
connection's handshake proves comes from HCCL_GO_JOB_SECRET when the launcher
sets it on every rank (then it never enters the store); otherwise rank 0
publishes a random one, which anyone who can read the store can read too.
Each rank says in the first round which of the two it uses, so a launcher
that set the variable on some ranks only gets an error on every rank. Only
set/get/add are used, so any Store works (TCPStore, FileStore, PrefixStore).

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


# How a rank gets the job secret, published beside its host id.
_FROM_ENV, _FROM_STORE = "env", "store"


def _check_secret_sources(sources: list[str]) -> None:
    """Every rank must take the secret from the same place; names the odd ones."""
    from_env = [r for r, s in enumerate(sources) if s == _FROM_ENV]
    if from_env and len(from_env) != len(sources):
        others = [r for r, s in enumerate(sources) if s != _FROM_ENV]
        raise RuntimeError(
            f"hccl_go: HCCL_GO_JOB_SECRET is set on ranks {from_env} but not on ranks {others} "
            f"of this group; set it to the same value on every rank, or on none"
        )


def exchange(store, rank: int, size: int, options: str) -> Peers:
    """Publishes this rank's host id, then its listening address, and returns
    everyone's. options is the group's options string (listen_addr,
    socket_ifname, ... over the HCCL_GO_* variables)."""
    prefix = f"hccl_go/{size}/{_generation(store, size)}/"
    env_secret = os.environ.get("HCCL_GO_JOB_SECRET", "")
    source = _FROM_ENV if env_secret else _FROM_STORE
    # "source host-id": the source is one word, the host id may hold anything.
    first = _gather(store, prefix + "host/", rank, size, f"{source} {host_id()}")
    sources = [v.split(" ", 1)[0] for v in first]
    hosts = [v.split(" ", 1)[1] for v in first]
    _check_secret_sources(sources)
    listener, addr = _C.listen_rank(rank, hosts, store_host(store), options)
    try:
        if rank == 0 and not env_secret:
            store.set(prefix + "secret", secrets.token_hex(32))
        addrs = _gather(store, prefix + "addr/", rank, size, addr)
        secret = env_secret or store.get(prefix + "secret").decode()
    except BaseException:
        _C.listener_close(listener)
        raise
    return Peers(listener, addrs, hosts, secret)
