package topo

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// The scale model: what one rank costs at init, in connections, descriptors
// and memory, for a cluster of Hosts × RanksPerHost ranks, as the library
// connects today (pgbackend/connect.go, transport/tcp, transport/shm,
// transport/arena):
//
//   - TCP, links made at init (HCCL_GO_LAZY_LINKS=0, and auto up to 64
//     ranks on other hosts): a rank links to every rank of the other hosts,
//     StreamsPerPeer connections each, and to none of its own host (those
//     talk through shared memory): S·(N-k) sockets. The listener is closed
//     once the mesh is up. Rank i dials the ranks below it and accepts the
//     ones above, every dial in its own goroutine; an acceptor handshakes at
//     most maxPendingHandshakes connections at once and refuses the rest,
//     which retry after 10 ms, doubling to 500 ms.
//   - TCP, lazy links (HCCL_GO_LAZY_LINKS=1, and auto above 64): a link is
//     made on its first send or receive, and the listener lives on. After
//     init a rank holds the links of discovery's ring in rank order that
//     cross hosts (1 on hosts of several ranks, 2 on hosts of one) and the
//     listener; the ops add their algorithms' partners on other hosts
//     (ScaleFanout).
//   - Shared memory (k > 1): one message segment per rank, a ring per local
//     peer (shmSegmentBytes), and one arena segment per collective stream
//     (arenaSegmentBytes), all fallocated in /dev/shm, so the host holds
//     them whether or not their pages are touched. A rank keeps a pidfd per
//     local peer and, per stream, the descriptor of each local peer's arena
//     segment and of its own (their locks tell a dead peer from a slow one).
//   - Discovery: one ring all-gather of 48 bytes per rank in rank order over
//     those links (N-1 dependent steps), and, across hosts, a 4 MiB copy and
//     reduction timed per rank (topology_exchange.go measureLocal).
//   - Through torch, each rank also publishes two values in the rendezvous
//     store and reads every rank's (python/torch_hccl_go/_rendezvous.py):
//     2N+4 requests per rank, 2N²+4N on the store.
//
// CPU and memory per item are calibrated on scale runs of this machine
// (ScaleCalibration; `hccl-go-topo check` prints model against measured).

// Sizes and limits of the code the model follows.
const (
	// shm (transport/shm/config.go, layout.go).
	shmDefaultSlots    = 64
	shmDefaultSlotSize = 64 << 10
	shmMinSlots        = 4
	shmSegmentBudget   = 32 << 20
	shmLine            = 64
	shmPage            = 4096
	shmRingCtrl        = 2 * shmLine
	// arena (transport/arena/config.go, layout.go): 4 KiB inline slots and
	// 8 MiB of data halves by default.
	arenaInlineBytes = 4 << 10
	arenaDataBytes   = 8 << 20
	arenaStampBytes  = 8 + 24 // flag word and stamp before an inline slot's payload
	// tcp (transport/tcp/connect.go, link.go).
	maxPendingHandshakes = 64
	tcpReadBufferBytes   = 64 << 10
	// rankInfoBytes is discovery's all-gathered record (pgbackend).
	rankInfoBytes = 48
)

// ShmSlots is the ring length of a shared-memory segment on a host of k
// ranks (transport/shm defaultSlotsFor): the rings of a segment share 32 MiB,
// between 4 and 64 slots of 64 KiB each.
func ShmSlots(k int) int {
	if k < 2 {
		return shmDefaultSlots
	}
	fit := shmSegmentBudget / ((k - 1) * (shmLine + shmDefaultSlotSize))
	return min(shmDefaultSlots, max(shmMinSlots, fit))
}

// ShmSegmentBytes is one rank's message segment on a host of k ranks: a
// header page and a ring per other local rank (0 for k < 2).
func ShmSegmentBytes(k int) int64 {
	if k < 2 {
		return 0
	}
	ring := shmRingCtrl + ShmSlots(k)*(shmLine+shmDefaultSlotSize)
	return roundUp64(int64(shmPage+(k-1)*ring), shmPage)
}

// ArenaSegmentBytes is one rank's arena segment (one per collective stream):
// a header page, two inline slots, two data halves.
func ArenaSegmentBytes() int64 {
	inline := roundUp64(arenaInlineBytes+arenaStampBytes, shmLine) - arenaStampBytes
	slots := roundUp64(shmPage+2*(arenaStampBytes+inline), shmPage)
	return slots + arenaDataBytes
}

func roundUp64(n, to int64) int64 { return (n + to - 1) / to * to }

// ScaleCosts are the per-item costs of the model, calibrated on this
// machine (DefaultScaleCosts).
type ScaleCosts struct {
	// CPU of an init call: fixed, extra when the ranks span hosts (the
	// local speed measurements, the hierarchy), per TCP connection end
	// (dial or accept, handshake, socket options), per local peer (mapping
	// its segments, watching its process, the ring in our segment).
	InitCPU, MultiHostCPU, ConnCPU, LocalPeerCPU time.Duration
	// Resident private memory after init beyond the process's own: fixed,
	// extra across hosts, per TCP connection (its reader's buffer pages
	// touched so far, goroutine, link state), per local peer.
	BaseBytes, MultiHostBytes, ConnBytes, LocalPeerBytes int64
	// ConnActiveBytes is a TCP connection's private memory once messages
	// of 64 KiB or more have crossed it: the whole read buffer, a grown
	// reader stack.
	ConnActiveBytes int64
	// KernelSocketBytes is the kernel's memory of an idle TCP socket (its
	// slab objects: tcp_sock, inode, file, dentry, epoll item), from
	// /proc/slabinfo here; buffered data comes on top.
	KernelSocketBytes int64
	// HopSoftware is a message's software cost between two ranks beyond
	// the link's latency (the discovery ring's steps).
	HopSoftware time.Duration
	// BaseFDs are the descriptors of a rank with no link and no local
	// peer: the process's own (stdio) and the runtime's (epoll, its
	// wake-up pipe), measured.
	BaseFDs int
}

// DefaultScaleCosts were measured here (2 cores; docs/scale.md,
// bench/results/2026-12-03/sim-check):
//   - ConnCPU: BenchmarkConnectMesh (transport/tcp), a loopback mesh of
//     16-64 in-process ranks: 65-71 µs of CPU per connection end;
//   - InitCPU, LocalPeerCPU: getrusage around the init call of one host of
//     16 and 32 ranks (16.3 and 22.9 ms); MultiHostCPU: 32 hosts of one
//     rank (14.1 ms, less the connections);
//   - memory: a least-squares fit of the anonymous pages each init added,
//     over 11 runs of 16-128 ranks on 1-32 hosts (within 15% of each);
//   - HopSoftware: half the round trip of an 8-byte message between two
//     in-process ranks over loopback (BenchmarkTCPSendRecv pingpong, 32 µs).
//
// CPU measured with more ranks than cores also holds waits that spin or
// yield while a peer is not scheduled; the check prints how much.
var DefaultScaleCosts = ScaleCosts{
	InitCPU:           10 * time.Millisecond,
	MultiHostCPU:      2 * time.Millisecond,
	ConnCPU:           70 * time.Microsecond,
	LocalPeerCPU:      410 * time.Microsecond,
	BaseBytes:         424 << 10,
	MultiHostBytes:    4554 << 10,
	ConnBytes:         28 << 10,
	LocalPeerBytes:    18 << 10,
	ConnActiveBytes:   tcpReadBufferBytes + 16<<10,
	KernelSocketBytes: 3700,
	HopSoftware:       15 * time.Microsecond,
	BaseFDs:           9,
}

// ScaleConfig is a cluster and the library settings that size a rank.
type ScaleConfig struct {
	Hosts, RanksPerHost int
	// StreamsPerPeer is HCCL_GO_STREAMS_PER_PEER; Streams HCCL_GO_STREAMS
	// (an arena each); Arenas is HCCL_GO_SHM_COLLECTIVES.
	StreamsPerPeer, Streams int
	Arenas                  bool
	// LazyLinks is HCCL_GO_LAZY_LINKS: "0" (links at init), "1" (on first
	// use) or "auto" (on first use above 64 ranks on other hosts).
	LazyLinks string
	// One-way latencies between hosts and inside one.
	InterLatency, IntraLatency time.Duration
	// StoreRate is the rendezvous store's requests per second and
	// StoreRTT one request's round trip (through torch); StoreRate 0: no
	// store (the C API with the caller's own exchange).
	StoreRate float64
	StoreRTT  time.Duration
	// FDLimit is the soft RLIMIT_NOFILE to check the descriptors against;
	// Somaxconn the listen backlog (net.core.somaxconn).
	FDLimit, Somaxconn int
	Costs              ScaleCosts
}

// ScaleFanout is a rank's state once ops of some algorithms have made
// their links (lazy links): its sockets, descriptors and private memory
// with those links used, and the CPU and round trips of making them on
// first use.
type ScaleFanout struct {
	Use             string        `json:"use"`
	Peers           int           `json:"peers"`
	Sockets         int           `json:"sockets"`
	FDs             int           `json:"fds"`
	Private         int64         `json:"private_bytes"`
	FirstUse        time.Duration `json:"-"`
	FirstUseSeconds float64       `json:"first_use_seconds"`
}

// ScaleTerm is one named part of a prediction.
type ScaleTerm struct {
	Name    string        `json:"name"`
	Time    time.Duration `json:"-"`
	Seconds float64       `json:"seconds"`
}

// ScaleResult is what one rank costs, and the job.
type ScaleResult struct {
	Ranks        int `json:"ranks"`
	Hosts        int `json:"hosts"`
	RanksPerHost int `json:"ranks_per_host"`
	// Lazy says the links are made on first use (ScaleConfig.LazyLinks).
	Lazy bool `json:"lazy_links"`
	// Per rank, after init: Links are its TCP connections, Sockets those
	// and a lazy endpoint's listener.
	Links       int   `json:"links"`
	Sockets     int   `json:"sockets"`
	FDs         int   `json:"fds"`
	LocalPeers  int   `json:"local_peers"`
	PrivateInit int64 `json:"private_bytes_after_init"`
	// PrivateActive is the private memory once the rank is linked with
	// every rank of the other hosts and every link has carried large
	// messages (read buffers filled): the mesh at init, or what lazy links
	// reach after an all_to_all.
	PrivateActive int64 `json:"private_bytes_links_active"`
	// Fanout is, with lazy links, what a rank holds once its ops have
	// linked their algorithms' partners.
	Fanout      []ScaleFanout `json:"fanout,omitempty"`
	ShmBytes    int64         `json:"shm_bytes"`
	KernelBytes int64         `json:"kernel_socket_bytes"`
	// Per host and job.
	HostShmBytes     int64         `json:"host_shm_bytes"`
	HostSockets      int           `json:"host_sockets"`
	HostMemoryBytes  int64         `json:"host_memory_bytes"`
	JobConnections   int64         `json:"job_connections"`
	StoreRequests    int64         `json:"store_requests"`
	RankInitCPU      float64       `json:"rank_init_cpu_seconds"`
	InitTerms        []ScaleTerm   `json:"init_terms"`
	Init             time.Duration `json:"-"`
	InitSeconds      float64       `json:"init_seconds"`
	InitDominant     string        `json:"init_dominant"`
	MemoryDominant   string        `json:"memory_dominant"`
	AcceptArrivalPS  float64       `json:"accept_arrivals_per_s"`
	AcceptCapacityPS float64       `json:"accept_capacity_per_s"`
	Warnings         []string      `json:"warnings"`
}

// DefaultScaleConfig is a cluster of hosts × k ranks with the library's
// defaults and DefaultScaleCosts, 5 µs between hosts and 1 µs inside one
// (as simulate's defaults), no store.
func DefaultScaleConfig(hosts, k int) ScaleConfig {
	return ScaleConfig{
		Hosts: hosts, RanksPerHost: k, StreamsPerPeer: 1, Streams: 2, Arenas: true, LazyLinks: "auto",
		InterLatency: 5 * time.Microsecond, IntraLatency: time.Microsecond,
		FDLimit: 1 << 20, Somaxconn: 4096, Costs: DefaultScaleCosts,
	}
}

func (c ScaleConfig) validate() error {
	var errs []error
	if c.Hosts < 1 || c.RanksPerHost < 1 {
		errs = append(errs, fmt.Errorf("hosts and ranks per host must be at least 1, got %d and %d", c.Hosts, c.RanksPerHost))
	}
	if c.StreamsPerPeer < 1 || c.Streams < 1 {
		errs = append(errs, fmt.Errorf("streams per peer and streams must be at least 1, got %d and %d", c.StreamsPerPeer, c.Streams))
	}
	if c.Hosts*c.RanksPerHost < 2 {
		errs = append(errs, errors.New("need at least 2 ranks"))
	}
	if c.LazyLinks != "0" && c.LazyLinks != "1" && c.LazyLinks != "auto" {
		errs = append(errs, fmt.Errorf("lazy links %q is none of 0, 1, auto", c.LazyLinks))
	}
	if c.StoreRate < 0 || c.InterLatency < 0 || c.IntraLatency < 0 || c.StoreRTT < 0 {
		errs = append(errs, errors.New("rates and latencies must not be negative"))
	}
	return errors.Join(errs...)
}

// Remote is the ranks on other hosts than a rank's: N-k.
func (c ScaleConfig) Remote() int { return c.Hosts*c.RanksPerHost - c.RanksPerHost }

// Lazy says whether links are made on first use (pgbackend lazyLinks).
func (c ScaleConfig) Lazy() bool {
	return c.Remote() > 0 && (c.LazyLinks == "1" || (c.LazyLinks == "auto" && c.Remote() > lazyAutoRemote))
}

// lazyAutoRemote is the most ranks on other hosts that HCCL_GO_LAZY_LINKS=auto
// links at init (pgbackend).
const lazyAutoRemote = 64

// Links is a rank's TCP connections after init: S·(N-k) made at init; with
// lazy links, those of discovery's ring in rank order that cross hosts (the
// worst rank: 1 on hosts of several ranks, 2 on hosts of one).
func (c ScaleConfig) Links() int {
	if !c.Lazy() {
		return c.StreamsPerPeer * c.Remote()
	}
	cross := 1
	if c.RanksPerHost == 1 {
		cross = 2
	}
	return c.StreamsPerPeer * min(cross, c.Remote())
}

// Sockets is a rank's sockets after init: its links, and the listener of
// a lazy endpoint.
func (c ScaleConfig) Sockets() int {
	if c.Lazy() {
		return c.Links() + 1
	}
	return c.Links()
}

// LocalFDs is a rank's descriptors for shared memory: a pidfd per local
// peer and, with arenas, per stream its own arena segment and each local
// peer's.
func (c ScaleConfig) LocalFDs() int {
	peers := c.RanksPerHost - 1
	if peers == 0 {
		return 0
	}
	if !c.Arenas {
		return peers
	}
	return peers + c.Streams*(peers+1)
}

// ShmPerRank is what one rank fallocates in /dev/shm.
func (c ScaleConfig) ShmPerRank() int64 {
	if c.RanksPerHost < 2 {
		return 0
	}
	b := ShmSegmentBytes(c.RanksPerHost)
	if c.Arenas {
		b += int64(c.Streams) * ArenaSegmentBytes()
	}
	return b
}

// ScaleModel evaluates the model.
func ScaleModel(c ScaleConfig) (ScaleResult, error) {
	if err := c.validate(); err != nil {
		return ScaleResult{}, fmt.Errorf("scale model: %w", err)
	}
	n, k, h := c.Hosts*c.RanksPerHost, c.RanksPerHost, c.Hosts
	cc := c.Costs
	r := ScaleResult{Ranks: n, Hosts: h, RanksPerHost: k, LocalPeers: k - 1, Lazy: c.Lazy()}
	r.Links, r.Sockets = c.Links(), c.Sockets()
	r.FDs = cc.BaseFDs + r.Sockets + c.LocalFDs()
	multi := h > 1
	mesh := c.StreamsPerPeer * c.Remote()

	// Memory per rank.
	base := cc.BaseBytes + int64(k-1)*cc.LocalPeerBytes
	if multi {
		base += cc.MultiHostBytes
	}
	r.PrivateInit = base + int64(r.Links)*cc.ConnBytes
	r.PrivateActive = base + int64(mesh)*cc.ConnActiveBytes
	r.ShmBytes = c.ShmPerRank()
	r.KernelBytes = int64(r.Sockets) * cc.KernelSocketBytes
	r.HostShmBytes = int64(k) * r.ShmBytes
	r.HostSockets = k * r.Sockets
	r.HostMemoryBytes = int64(k) * (r.PrivateActive + r.ShmBytes + int64(mesh)*cc.KernelSocketBytes)
	r.JobConnections = int64(n) * int64(r.Links) / 2
	r.MemoryDominant = dominantMemory(r, cc, mesh)
	if r.Lazy {
		r.Fanout = c.fanout(base)
	}

	// Init: the CPU of one rank (its own core), the handshakes' round
	// trips (the dials run at once), discovery's ring of N-1 steps, and
	// the store.
	cpu := cc.InitCPU + time.Duration(r.Links)*cc.ConnCPU + time.Duration(k-1)*cc.LocalPeerCPU
	if multi {
		cpu += cc.MultiHostCPU
	}
	r.RankInitCPU = cpu.Seconds()
	conns, local := time.Duration(r.Links)*cc.ConnCPU, time.Duration(k-1)*cc.LocalPeerCPU
	// One rank's own work: its CPU (its own core) and, since its dials run
	// at once, one handshake's round trips (TCP, then challenge, hello,
	// welcome: 2).
	own := []ScaleTerm{
		{Name: "CPU: TCP connections", Time: conns},
		{Name: "CPU: shared memory with local peers", Time: local},
		{Name: "CPU: fixed", Time: cpu - conns - local},
	}
	if r.Links > 0 {
		own = append(own, ScaleTerm{Name: "handshake round trips", Time: 4 * c.InterLatency})
	}
	var ownTime time.Duration
	for _, t := range own {
		ownTime += t.Time
	}
	// The busiest acceptor is rank 0: every rank of another host dials it.
	// Its dials arrive as fast as the dialers' CPU starts them (each works
	// through its own connections); it handshakes 64 at a time. Its
	// accepting overlaps its own work.
	var accept time.Duration
	if dials := mesh; dials > 0 && !r.Lazy {
		service := 4*c.InterLatency + cc.ConnCPU
		r.AcceptCapacityPS = maxPendingHandshakes / service.Seconds()
		spread := max(conns/2, time.Microsecond)
		r.AcceptArrivalPS = float64(dials) / spread.Seconds()
		accept = seconds(float64(dials) / r.AcceptCapacityPS)
		if r.AcceptArrivalPS > r.AcceptCapacityPS {
			r.Warnings = append(r.Warnings, fmt.Sprintf("rank 0's dials arrive at %.3g/s, above the %.3g/s it handshakes 64 at a time: the excess is refused and retried after 10-500 ms", r.AcceptArrivalPS, r.AcceptCapacityPS))
		}
		if c.Somaxconn > 0 && dials > c.Somaxconn {
			r.Warnings = append(r.Warnings, fmt.Sprintf("rank 0 takes %d dials against a listen backlog of %d (net.core.somaxconn): a burst that outruns its accept loop loses SYNs, retried after 1 s", dials, c.Somaxconn))
		}
	}
	// Then discovery's ring all-gather in rank order: N-1 dependent steps,
	// the last rank's block crossing every link but one (H hops between
	// hosts, N-H inside them).
	ring := time.Duration(n-1)*cc.HopSoftware + time.Duration(n-h)*c.IntraLatency + time.Duration(h)*c.InterLatency
	if h == 1 {
		ring = time.Duration(n-1) * (cc.HopSoftware + c.IntraLatency)
	}
	after := []ScaleTerm{{Name: fmt.Sprintf("discovery all-gather (%d steps)", n-1), Time: ring}}
	// Before all of it, through torch: the store, one request at a time
	// per rank, all of them on one server.
	if c.StoreRate > 0 {
		r.StoreRequests = 2*int64(n)*int64(n) + 4*int64(n)
		perRank := time.Duration(2*n+4) * c.StoreRTT
		load := seconds(float64(r.StoreRequests) / c.StoreRate)
		after = append(after, ScaleTerm{Name: fmt.Sprintf("rendezvous store (%d requests)", r.StoreRequests), Time: max(perRank, load)})
	}
	r.Init = max(ownTime, accept)
	r.InitTerms = own
	if accept > 0 {
		r.InitTerms = append(r.InitTerms, ScaleTerm{Name: "rank 0 accepting, 64 at a time (overlaps)", Time: accept})
	}
	for _, t := range after {
		r.Init += t.Time
		r.InitTerms = append(r.InitTerms, t)
	}
	r.InitSeconds = r.Init.Seconds()
	best := 0
	for i := range r.InitTerms {
		r.InitTerms[i].Seconds = r.InitTerms[i].Time.Seconds()
		if r.InitTerms[i].Time > r.InitTerms[best].Time {
			best = i
		}
	}
	r.InitDominant = r.InitTerms[best].Name

	if c.FDLimit > 0 && r.FDs > c.FDLimit {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d descriptors per rank exceed RLIMIT_NOFILE %d: raise it (ulimit -n)", r.FDs, c.FDLimit))
	}
	if k*mesh > 65536 {
		when := "at init"
		if r.Lazy {
			when = "once an op links every peer (all_to_all)"
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d TCP connections per host %s: above nf_conntrack_max's usual 65536-262144 where connection tracking is on", k*mesh, when))
	}
	if r.Lazy && mesh > c.Somaxconn && c.Somaxconn > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("an op that links every peer (all_to_all) makes rank 0 take %d dials at once against a listen backlog of %d (net.core.somaxconn)", mesh, c.Somaxconn))
	}
	return r, nil
}

// dominantMemory names the largest part of a host's memory for its ranks.
func dominantMemory(r ScaleResult, cc ScaleCosts, mesh int) string {
	links := int64(mesh) * cc.ConnActiveBytes
	parts := []struct {
		name string
		b    int64
	}{
		{"TCP links' read buffers and state", links},
		{"shared-memory segments (/dev/shm)", r.ShmBytes},
		{"the runtime and discovery", r.PrivateActive - links},
		{"kernel sockets", int64(mesh) * cc.KernelSocketBytes},
	}
	best := parts[0]
	for _, p := range parts[1:] {
		if p.b > best.b {
			best = p
		}
	}
	return best.name
}

// fanout is what a rank holds, with lazy links, once ops of each kind of
// algorithm have linked their partners on other hosts (host-major ranks,
// as the library orders its rings): rings, the arena hierarchy's
// all_reduce (a ring of one rank per host) and chains 2 peers; recursive
// doubling and halving and trees log2(H); the hierarchy's all_gather and
// reduce_scatter one rank of every other host, H-1; all_to_all every rank
// of the other hosts, N-k. base is the private memory without links.
func (c ScaleConfig) fanout(base int64) []ScaleFanout {
	cc, s := c.Costs, c.StreamsPerPeer
	logH := int(math.Ceil(math.Log2(float64(c.Hosts))))
	rows := []ScaleFanout{
		{Use: "ring, chain; hier all_reduce (rings across hosts)", Peers: min(2, c.Remote())},
		{Use: "rd, hd, tree (log2 of the hosts)", Peers: min(logH, c.Remote())},
		{Use: "hier all_gather, reduce_scatter (every other host)", Peers: c.Hosts - 1},
		{Use: "all_to_all (every rank of other hosts)", Peers: c.Remote()},
	}
	local := c.LocalFDs()
	for i := range rows {
		links := s * rows[i].Peers
		rows[i].Sockets = links + 1
		rows[i].FDs = cc.BaseFDs + rows[i].Sockets + local
		rows[i].Private = base + int64(links)*cc.ConnActiveBytes
		if links > 0 {
			rows[i].FirstUse = time.Duration(links)*cc.ConnCPU + 4*c.InterLatency
		}
		rows[i].FirstUseSeconds = rows[i].FirstUse.Seconds()
	}
	return rows
}

// Table writes the result for people.
func (r ScaleResult) Table() string {
	var b strings.Builder
	mb := func(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
	links := "TCP to every rank of other hosts at init"
	if r.Lazy {
		links = "lazy TCP links, made on first use"
	}
	fmt.Fprintf(&b, "%d ranks: %d hosts x %d ranks (%s; shared memory inside a host)\n", r.Ranks, r.Hosts, r.RanksPerHost, links)
	fmt.Fprintf(&b, "per rank, after init:\n")
	if r.Lazy {
		fmt.Fprintf(&b, "  %-44s %d (discovery's ring across hosts, and the listener)\n", "TCP sockets", r.Sockets)
	} else {
		fmt.Fprintf(&b, "  %-44s %d (S x (N - k))\n", "TCP sockets", r.Sockets)
	}
	fmt.Fprintf(&b, "  %-44s %d\n", "file descriptors", r.FDs)
	fmt.Fprintf(&b, "  %-44s %s\n", "private memory after init", mb(r.PrivateInit))
	fmt.Fprintf(&b, "  %-44s %s\n", "private memory, every peer linked and used", mb(r.PrivateActive))
	fmt.Fprintf(&b, "  %-44s %s\n", "/dev/shm fallocated", mb(r.ShmBytes))
	fmt.Fprintf(&b, "  %-44s %s\n", "kernel socket memory (idle)", mb(r.KernelBytes))
	fmt.Fprintf(&b, "  %-44s %s (%s)\n", "init", FormatDuration(r.Init), "one core per rank, no oversubscription")
	for _, t := range r.InitTerms {
		fmt.Fprintf(&b, "    %-42s %s\n", t.Name, FormatDuration(t.Time))
	}
	if len(r.Fanout) > 0 {
		fmt.Fprintf(&b, "per rank, once ops have linked their partners on other hosts:\n")
		fmt.Fprintf(&b, "  %-52s %7s %8s %8s %12s %12s\n", "algorithms", "peers", "sockets", "fds", "private", "first use")
		for _, f := range r.Fanout {
			fmt.Fprintf(&b, "  %-52s %7d %8d %8d %12s %12s\n", f.Use, f.Peers, f.Sockets, f.FDs, mb(f.Private), FormatDuration(f.FirstUse))
		}
	}
	fmt.Fprintf(&b, "per host: %d sockets after init, %s of /dev/shm, %s in all with every peer linked and used\n", r.HostSockets, mb(r.HostShmBytes), mb(r.HostMemoryBytes))
	fmt.Fprintf(&b, "job: %d TCP connections after init", r.JobConnections)
	if r.StoreRequests > 0 {
		fmt.Fprintf(&b, ", %d store requests", r.StoreRequests)
	}
	fmt.Fprintf(&b, "\ninit dominated by: %s; memory by: %s\n", r.InitDominant, r.MemoryDominant)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// ScaleHere predicts a run of this model's ranks on one machine of cores
// CPUs: every rank's init CPU shares them, so the job's init takes at
// least N·CPU/cores; oversubscription is N/cores.
func ScaleHere(r ScaleResult, cores int) (wall time.Duration, oversubscription float64) {
	cores = max(cores, 1)
	return seconds(float64(r.Ranks) * r.RankInitCPU / float64(cores)), float64(r.Ranks) / float64(cores)
}
