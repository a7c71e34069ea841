package pgbackend

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
)

// Config holds a communicator's settings. Each field has an HCCL_GO_*
// environment variable and an option key (the variable's name in lower case
// without the prefix) for the "key=value;key=value" options string of
// hcclGoCommInitRank. Options override the environment, which overrides the
// defaults. The README lists them all; keep that table in step with Vars.
type Config struct {
	// Timeout bounds every operation (and every wait inside it).
	Timeout time.Duration
	// ConnectTimeout bounds connection set-up at init.
	ConnectTimeout time.Duration
	// UnreachableTimeout bounds how long init keeps trying a peer's
	// advertised address while it takes no TCP connection (tcp.Config).
	UnreachableTimeout time.Duration
	// Algo overrides the algorithm per collective ("allreduce" -> "ring").
	Algo map[string]collectives.Algorithm
	// Transport is "auto", "shm" or "tcp".
	Transport string
	// SocketIfname selects the network interface to listen on, NCCL-style
	// (ifname.go); "": chosen by ListenRank (listen.go).
	SocketIfname string
	// ListenAddr is the "host:port" to listen on; it overrides SocketIfname
	// (a wildcard host listens on every interface, see listen.go).
	ListenAddr string
	// StreamsPerPeer is the number of TCP connections per peer.
	StreamsPerPeer int
	// ChunkBytes is the pipelining unit of ring/chain algorithms (0 = default).
	ChunkBytes int
	// ShmCollectives gives the ranks that share a host a shared-memory
	// arena (collectives/intra): single-host communicators run their
	// collectives in it, multi-host ones the intra-host phases of the
	// hierarchical algorithms (collectives/hier), instead of messages.
	ShmCollectives bool
	// SingleCopy says which of those collectives read peers' buffers
	// directly (process_vm_readv) where the kernel allows it
	// (intra.SingleCopy): "auto" the all_gathers of its range, "1" those
	// and the all_reduces of theirs, "0" none.
	SingleCopy string
	// FastLane runs small blocking all_reduces of those communicators at
	// once on the calling thread when their stream is idle (lane.go).
	FastLane bool
	// TopoProbe is HCCL_GO_TOPO_PROBE: "auto", "0" or "1"; TopoProbeBudget
	// the time probing aims at.
	TopoProbe       string
	TopoProbeBudget time.Duration
	// TopoFile is a topology file to load instead of probing, TopoDumpFile
	// where rank 0 writes the topology learned at init.
	TopoFile, TopoDumpFile string
	// TopoRing forces the order of ring and chain algorithms: "rank" or a
	// permutation such as "0,2,1,3" ("": the topology's ring).
	TopoRing string
	// NUMANode is this rank's NUMA node for topology discovery (-1: the
	// node the process is bound to, if any; numa.go).
	NUMANode int
	// Debug is the log level: "WARN" (default) or "INFO".
	Debug string
	// Check compares a fingerprint of every collective across ranks before
	// running it (check.go).
	Check bool
	// TraceSize is the number of ops the flight recorder keeps (0: off).
	TraceSize int
	// TraceDir is where flight-recorder dumps go ("": $TMPDIR/hccl-go-trace).
	TraceDir string
	// Compression is the wire format of float32 sum/avg/premul_sum
	// all_reduces over messages (compress.go).
	Compression collectives.Compression
	// Streams is the number of collective streams, StreamWorkers the ops
	// that run at once (0: one per stream), StreamDepth the ops queued per
	// stream before issuing blocks, StreamDefer the longest wait of a
	// ready op for a worker (streams.go).
	Streams, StreamWorkers, StreamDepth int
	StreamDefer                         time.Duration
	// GlobalRanks are the global ranks of a subgroup's members, for error
	// messages (option global_ranks only; globalranks.go).
	GlobalRanks []int
	// Unauthenticated accepts connections without a job secret (option
	// auth=none only; secret.go).
	Unauthenticated bool
	// SplitGroups says when torch_hccl_go builds a new group as a split of
	// the default group's communicator (split.go) rather than connect it
	// anew: "auto", "1" or "0". The Python side reads it; the library only
	// checks and documents it.
	SplitGroups string
	// LazyLinks says when the TCP links to the ranks of other hosts are
	// made: "1" on first use, "0" at init, "auto" on first use above
	// lazyAutoRemote such ranks (connect.go).
	LazyLinks string
}

// Var documents one configuration variable.
type Var struct {
	Env, Default, Doc string
	set               func(c *Config, v string) error
}

// Vars lists every setting, in the order the README shows them.
var Vars = []Var{
	{"HCCL_GO_TIMEOUT_MS", "1800000", "Timeout of every operation in ms (the process group's timeout overrides it).",
		func(c *Config, v string) error { return setMillis(&c.Timeout, v) }},
	{"HCCL_GO_CONNECT_TIMEOUT_MS", "120000", "Timeout of connection set-up at init in ms.",
		func(c *Config, v string) error { return setMillis(&c.ConnectTimeout, v) }},
	{"HCCL_GO_UNREACHABLE_MS", "5000", "How long in ms init keeps trying a peer's advertised address while it refuses connections, is unreachable or does not answer, before failing with an error that names the address (a rank's listener is open before its address is published, so this is never a slow start; a peer that answers but starts late is waited for up to HCCL_GO_CONNECT_TIMEOUT_MS).",
		func(c *Config, v string) error { return setMillis(&c.UnreachableTimeout, v) }},
	{"HCCL_GO_ALGO", "", "Algorithm override: `ring`, `rd`, `hd`, `hier` (all_reduce), or per op `allreduce=hier,allgather=ring,broadcast=chain` (`hier` also applies to all_gather, reduce_scatter and broadcast; rings and chains follow the topology's ring). `numa` (all_reduce, all_gather, reduce_scatter, broadcast, reduce) forces the NUMA level of the hierarchy where the topology has one.",
		func(c *Config, v string) error { return parseAlgo(c, v) }},
	{"HCCL_GO_TRANSPORT", "auto", "`auto` (shared memory within a host, TCP across), `shm`, or `tcp`.",
		func(c *Config, v string) error { return setEnum(&c.Transport, v, "auto", "shm", "tcp") }},
	{"HCCL_GO_SOCKET_IFNAME", "", "Network interface to listen on, as NCCL_SOCKET_IFNAME: a name prefix (`eth`), an exact name (`=eth0`), a comma-separated list of either, or a list to exclude (`^docker,lo`). Default: loopback when every rank is on this host, else the local address of the route to the rendezvous store's host (MASTER_ADDR), else the first address of an interface that is up and not loopback, docker or virbr.",
		func(c *Config, v string) error { return setIfname(c, v) }},
	{"HCCL_GO_LISTEN_ADDR", "", "`host:port` to listen on (port 0: any free port; `[v6]:port` for IPv6); overrides HCCL_GO_SOCKET_IFNAME. A wildcard host (`0.0.0.0:0`, `[::]:0`) accepts on every interface and publishes the address chosen as without it.",
		func(c *Config, v string) error { return setListenAddr(c, v) }},
	{"HCCL_GO_STREAMS_PER_PEER", "1", "TCP connections per peer; large messages are striped across them.",
		func(c *Config, v string) error { return setInt(&c.StreamsPerPeer, v, 1, 64) }},
	{"HCCL_GO_CHUNK_BYTES", "0", "Pipelining chunk of ring/chain algorithms in bytes (0: the library's default).",
		func(c *Config, v string) error { return setInt(&c.ChunkBytes, v, 0, 1<<30) }},
	{"HCCL_GO_SHM_COLLECTIVES", "1", "`1`: ranks that share a host work directly in shared memory: the whole collective when all ranks share one host, the intra-host phases of the hierarchical algorithms across hosts; `0`: as messages over the shm transport.",
		func(c *Config, v string) error { return setBool(&c.ShmCollectives, v) }},
	{"HCCL_GO_SINGLE_COPY", "auto", "Which shared-memory collectives read peers' buffers directly with process_vm_readv where the kernel allows it (probed once per kind of op, all ranks agree, else staged through shared memory): `auto`: the all_gathers of 4 to 8 MiB of output (0.6-0.8x the staged time on a 2-core VM); `1`: those and the all_reduces of 256 KiB to 1 MiB (at 2 ranks; 2 MiB/ranks beyond), which measured 1.3-2x slower than staged there (the kernel's copies pin every 4 KiB page); `0`: none.",
		func(c *Config, v string) error { return setEnum(&c.SingleCopy, v, "auto", "0", "1") }},
	{"HCCL_GO_FAST_LANE", "1", "`1`: a blocking collective (the C API called with a NULL work pointer, torch's synchronous ops, `torch_hccl_go.all_reduce`) on a communicator whose ranks share this host runs at once on the calling thread when its stream is idle, with no work handle and no library thread: all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all and barrier; an all_reduce that the shared memory carries in one step (up to 256 KiB at 2 ranks) or in its reduce-scatter/all-gather pipeline (larger ones) runs in C without entering the Go runtime where it can; `0`: every op is queued.",
		func(c *Config, v string) error { return setBool(&c.FastLane, v) }},
	{"HCCL_GO_TOPO_PROBE", "auto", "Link probing at init: `1` on, `0` off, `auto`: on when the ranks span several hosts, number at most 16 and link at init (probing links every pair; see HCCL_GO_LAZY_LINKS).",
		func(c *Config, v string) error { return setEnum(&c.TopoProbe, v, "auto", "0", "1") }},
	{"HCCL_GO_TOPO_PROBE_MS", "500", "Time link probing aims at, in ms (4 times this plus 5 s is its hard limit).",
		func(c *Config, v string) error { return setMillis(&c.TopoProbeBudget, v) }},
	{"HCCL_GO_TOPO_FILE", "", "Topology file to load instead of probing (the format HCCL_GO_TOPO_DUMP_FILE writes; every rank must load the same).",
		func(c *Config, v string) error { c.TopoFile = v; return nil }},
	{"HCCL_GO_TOPO_DUMP_FILE", "", "Where rank 0 writes the topology learned at init (JSON, see topo/README.md).",
		func(c *Config, v string) error { c.TopoDumpFile = v; return nil }},
	{"HCCL_GO_TOPO_RING", "", "Order of ring and chain algorithms: empty for the topology's ring, `rank` for rank order, or a permutation such as `0,2,1,3`.",
		func(c *Config, v string) error { c.TopoRing = v; return nil }},
	{"HCCL_GO_NUMA_NODE", "auto", "This rank's NUMA node for the topology (a non-negative integer), in place of discovery: `auto` takes the node every CPU the process may run on lies in (bound with `numactl --cpunodebind`, taskset or the launcher), and no node for a process free to move between nodes. Where a host's ranks span NUMA nodes joined by slower links (the topology file's `numa` and links, probing, or the nominal cross-NUMA link at half the bandwidth), the hierarchical collectives may work with one group per (host, NUMA node), chosen per op and size by the cost model (docs/topology.md).",
		func(c *Config, v string) error { return setNUMANode(c, v) }},
	{"HCCL_GO_DEBUG", "WARN", "Log level: `WARN` or `INFO` (logs transports and algorithm choices once).",
		func(c *Config, v string) error { return setEnum(&c.Debug, strings.ToUpper(v), "WARN", "INFO") }},
	{"HCCL_GO_CHECK", "auto", "`1`: before each collective the ranks compare its fingerprint (op, sequence number, bytes, dtype, reduce op, root) and fail alike on a mismatch; `0`: no check; `auto`: on when TORCH_DISTRIBUTED_DEBUG=DETAIL.",
		func(c *Config, v string) error { return setCheck(c, v) }},
	{"HCCL_GO_TRACE_SIZE", "2000", "Ops kept per communicator by the flight recorder, dumped as JSON on the first failure and on request (0: off).",
		func(c *Config, v string) error { return setInt(&c.TraceSize, v, 0, 1<<20) }},
	{"HCCL_GO_TRACE_DIR", "", "Directory of flight-recorder dumps (default: $TMPDIR/hccl-go-trace).",
		func(c *Config, v string) error { c.TraceDir = v; return nil }},
	{"HCCL_GO_COMPRESSION", "none", "Wire compression of float32 sum/avg/premul_sum all_reduce over links: `none`, `fp16` (per-chunk power-of-two scaling) or `bf16`; float32 accumulation at every step. Not on the single-host shared-memory arena path; across hosts only the hops between hosts of the hierarchical all_reduce.",
		func(c *Config, v string) (err error) {
			c.Compression, err = collectives.ParseCompression(v)
			return err
		}},
	{"HCCL_GO_STREAMS", "2", "Collective streams per communicator (2-4): the C API's `stream` argument. Stream 0 is the default, 1 has high priority, the others default priority. Ops of one stream run in order, of different streams concurrently; single-host communicators get a shared-memory arena per stream.",
		func(c *Config, v string) error { return setInt(&c.Streams, v, 2, numStreams) }},
	{"HCCL_GO_STREAM_WORKERS", "0", "Collective ops of a communicator that run at once (0: one per stream). When fewer than the busy streams, ready ops start by stream priority (see HCCL_GO_STREAM_DEFER_MS).",
		func(c *Config, v string) error { return setInt(&c.StreamWorkers, v, 0, 1024) }},
	{"HCCL_GO_STREAM_DEPTH", "1024", "Ops queued per stream before issuing one blocks (back-pressure, for at most the op timeout).",
		func(c *Config, v string) error { return setInt(&c.StreamDepth, v, 1, 1<<20) }},
	{"HCCL_GO_STREAM_DEFER_MS", "5", "Longest wait in ms of a ready op for a worker under HCCL_GO_STREAM_WORKERS; it then starts anyway, since ranks may start ops of different streams in different orders and a strict budget could deadlock.",
		func(c *Config, v string) error { return setMillis(&c.StreamDefer, v) }},
	{"HCCL_GO_SPLIT_GROUPS", "auto", "When torch_hccl_go builds a new group (`new_group`, `new_subgroups`, device meshes) as a split of the default group's communicator, if that is an hccl_go one: the split shares the default group's links and threads and costs no file descriptor or thread; on one host it maps an arena of its own, across hosts it runs no hierarchical algorithm (see Groups). `auto`: when the members are all on one host or each on a host of its own (a device mesh's cross-host dimension); `1`: always; `0`: never, every group connects its own links. A group whose Options set `transport`, `socket_ifname`, `listen_addr` or `streams_per_peer` always connects its own.",
		func(c *Config, v string) error { return setEnum(&c.SplitGroups, v, "auto", "0", "1") }},
	{"HCCL_GO_LAZY_LINKS", "auto", "When a rank makes its TCP links to the ranks of other hosts. `1`: on first use, so a rank links only with the peers its collectives and point-to-point calls exchange with and sockets per rank follow the algorithms' fan-out (ring neighbours, the same local rank on the other hosts), not the world size; a peer that cannot be reached is reported at that first use. `0`: every link at init, which then fails within seconds when a peer cannot be reached. `auto`: on first use when more than 64 ranks are on other hosts, else at init.",
		func(c *Config, v string) error { return setEnum(&c.LazyLinks, v, "auto", "0", "1") }},
}

// DefaultConfig is the configuration with every variable at its default.
func DefaultConfig() Config {
	var c Config
	for _, v := range Vars {
		if err := v.set(&c, v.Default); err != nil {
			panic(fmt.Sprintf("bad default for %s: %v", v.Env, err)) // a bug in Vars, caught by tests
		}
	}
	return c
}

// ConfigFromEnv starts from the defaults and applies every HCCL_GO_*
// variable that is set.
func ConfigFromEnv() (Config, error) {
	return configFrom(os.LookupEnv)
}

// ConfigFrom is ConfigFromEnv with another source of variables. The C ABI
// passes the C library's getenv: in a process that embeds the library
// (Python), variables set after start-up are visible there but not in Go's
// own copy of the environment.
func ConfigFrom(lookup func(string) (string, bool)) (Config, error) {
	return configFrom(lookup)
}

func configFrom(lookup func(string) (string, bool)) (Config, error) {
	c := DefaultConfig()
	for _, v := range Vars {
		if s, ok := lookup(v.Env); ok && s != "" {
			if err := v.set(&c, s); err != nil {
				return c, fmt.Errorf("%s=%q: %w", v.Env, s, err)
			}
		}
	}
	return c, nil
}

// ApplyOptions applies a "key=value;key=value" string, where key is a
// variable's name without HCCL_GO_ in any case (e.g. "timeout_ms=5000").
func (c *Config) ApplyOptions(opts string) error {
	for _, kv := range strings.Split(opts, ";") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		key, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("option %q: want key=value", kv)
		}
		if strings.EqualFold(strings.TrimSpace(key), globalRanksOption) {
			ranks, err := parseGlobalRanks(val)
			if err != nil {
				return fmt.Errorf("option %s: %w", key, err)
			}
			c.GlobalRanks = ranks
			continue
		}
		if strings.EqualFold(strings.TrimSpace(key), authOption) {
			if err := parseAuth(c, val); err != nil {
				return fmt.Errorf("option %s: %w", key, err)
			}
			continue
		}
		env := "HCCL_GO_" + strings.ToUpper(strings.TrimSpace(key))
		v, ok := lookupVar(env)
		if !ok {
			return fmt.Errorf("unknown option %q", key)
		}
		if err := v.set(c, strings.TrimSpace(val)); err != nil {
			return fmt.Errorf("option %s: %w", key, err)
		}
	}
	return nil
}

func lookupVar(env string) (Var, bool) {
	for _, v := range Vars {
		if v.Env == env {
			return v, true
		}
	}
	return Var{}, false
}

// AlgoFor returns the algorithm override for a collective ("" = automatic).
func (c *Config) AlgoFor(op string) collectives.Algorithm { return c.Algo[op] }

func setMillis(d *time.Duration, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive number of milliseconds, got %q", v)
	}
	*d = time.Duration(n) * time.Millisecond
	return nil
}

func setInt(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("want an integer in [%d, %d], got %q", lo, hi, v)
	}
	*dst = n
	return nil
}

func setBool(dst *bool, v string) error {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		*dst = true
	case "0", "false", "no", "off":
		*dst = false
	default:
		return fmt.Errorf("want 0 or 1, got %q", v)
	}
	return nil
}

func setEnum(dst *string, v string, allowed ...string) error {
	v = strings.ToLower(v)
	for _, a := range allowed {
		if strings.ToLower(a) == v {
			*dst = a
			return nil
		}
	}
	return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, "|"), v)
}

// parseAlgo accepts "ring" (all_reduce) or "allreduce=ring,broadcast=tree".
func setNUMANode(c *Config, v string) error {
	if strings.EqualFold(v, "auto") {
		c.NUMANode = -1
		return nil
	}
	return setInt(&c.NUMANode, v, 0, 1<<16)
}

func parseAlgo(c *Config, v string) error {
	c.Algo = map[string]collectives.Algorithm{}
	if v == "" {
		return nil
	}
	if !strings.Contains(v, "=") {
		c.Algo["allreduce"] = collectives.Algorithm(strings.ToLower(v))
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		op, algo, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("want op=algo, got %q", part)
		}
		c.Algo[strings.ToLower(strings.TrimSpace(op))] = collectives.Algorithm(strings.ToLower(strings.TrimSpace(algo)))
	}
	return nil
}
