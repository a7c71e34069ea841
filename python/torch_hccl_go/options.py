"""Options: the settings of one hccl_go process group.

Pass them as pg_options:

    dist.init_process_group("hccl_go", pg_options=torch_hccl_go.Options(algo="ring"))
    dist.new_group(ranks, backend="hccl_go", pg_options=torch_hccl_go.Options(transport="tcp"))

Each field left as None falls back to its HCCL_GO_* environment variable,
then to the library's default (see `python -m torch_hccl_go.info`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta


@dataclass
class Options:
    # Timeout of every operation and of Work.wait(); default: the process
    # group's timeout (init_process_group(timeout=...)).
    timeout: timedelta | None = None
    # Timeout of connection set-up at init (HCCL_GO_CONNECT_TIMEOUT_MS).
    connect_timeout: timedelta | None = None
    # Algorithm override: "ring", or per op "allreduce=ring,broadcast=tree" (HCCL_GO_ALGO).
    algo: str | None = None
    # "auto", "shm" or "tcp" (HCCL_GO_TRANSPORT).
    transport: str | None = None
    # Network interface to listen on, NCCL-style: "eth", "=eth0", "^docker,lo"
    # (HCCL_GO_SOCKET_IFNAME).
    socket_ifname: str | None = None
    # TCP connections per peer (HCCL_GO_STREAMS_PER_PEER).
    streams_per_peer: int | None = None
    # Pipelining chunk of ring/chain algorithms in bytes (HCCL_GO_CHUNK_BYTES).
    chunk_bytes: int | None = None
    # Wire compression, if the library supports it (HCCL_GO_COMPRESSION).
    compression: str | None = None
    # Log level, "WARN" or "INFO" (HCCL_GO_DEBUG).
    debug: str | None = None
    # "host:port" to listen on ("[v6]:port"; port 0: any; a wildcard host
    # listens everywhere and publishes the address chosen as without it);
    # default: chosen by the library (HCCL_GO_LISTEN_ADDR).
    listen_addr: str | None = None
    # Library stream of the group's collectives: "default", "high" (high
    # priority) or an index below HCCL_GO_STREAMS (HCCL_GO_STREAM; see
    # torch_hccl_go.streams).
    stream: str | int | None = None
    # Build the group as a split of the default group's communicator (True), or connect
    # its own links (False); default: HCCL_GO_SPLIT_GROUPS. Ignored for the default group.
    split_groups: bool | None = None
    # Any other library option, by its key (the variable's name without HCCL_GO_, lower case).
    extra: dict[str, str] = field(default_factory=dict)

    def effective_timeout(self, group_timeout: timedelta) -> timedelta:
        """The operation timeout in force for a group created with group_timeout."""
        return self.timeout if self.timeout is not None else group_timeout

    def to_string(self, group_timeout: timedelta) -> str:
        """The "key=value;key=value" string for hcclGoCommInitRank."""
        pairs: dict[str, str] = {"timeout_ms": str(_millis(self.effective_timeout(group_timeout)))}
        if self.connect_timeout is not None:
            pairs["connect_timeout_ms"] = str(_millis(self.connect_timeout))
        for key in (
            "algo",
            "transport",
            "socket_ifname",
            "listen_addr",
            "streams_per_peer",
            "chunk_bytes",
            "compression",
            "debug",
        ):
            value = getattr(self, key)
            if value is not None:
                pairs[key] = str(value)
        for key, value in self.extra.items():
            pairs[str(key).lower()] = str(value)
        for key, value in pairs.items():
            if not key or any(c in key for c in "=; ") or ";" in value:
                raise ValueError(f"hccl_go: option {key!r}={value!r}: keys and values may not contain ';' (keys: '=')")
        return ";".join(f"{k}={v}" for k, v in pairs.items())


def _millis(t: timedelta) -> int:
    ms = int(t.total_seconds() * 1000)
    if ms <= 0:
        raise ValueError(f"hccl_go: a timeout must be positive, got {t}")
    return ms
