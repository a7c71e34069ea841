package pgbackend

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/hybrid"
	"github.com/hccl-go/hccl-go/transport/shm"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// Rendezvous is what every rank learned about the others through the
// launcher's store.
type Rendezvous struct {
	Rank    int
	Addrs   []string // per rank: its listener's address
	HostIDs []string // per rank: host identity; nil when unknown
	Secret  []byte   // the job's secret for connection handshakes
}

// connect builds this rank's communicator: it links to every other rank
// (consuming the listener) and returns once all links are up. Connect
// (topology.go) calls it, then learns the topology.
func connect(ctx context.Context, l *tcp.Listener, rv Rendezvous, cfg Config) (*Communicator, error) {
	size := len(rv.Addrs)
	if rv.Rank < 0 || rv.Rank >= size {
		l.Close()
		return nil, fmt.Errorf("init: %w: rank %d out of range [0, %d)", ErrInvalidArgument, rv.Rank, size)
	}
	if rv.HostIDs != nil && len(rv.HostIDs) != size {
		l.Close()
		return nil, fmt.Errorf("init: %w: %d host ids for %d ranks", ErrInvalidArgument, len(rv.HostIDs), size)
	}
	if cfg.GlobalRanks != nil && len(cfg.GlobalRanks) != size {
		l.Close()
		return nil, fmt.Errorf("init: %w: option global_ranks lists %d ranks for %d", ErrInvalidArgument, len(cfg.GlobalRanks), size)
	}
	if err := checkAdvertised(rv); err != nil {
		l.Close()
		return nil, fmt.Errorf("init rank %d of %d: %w", rv.Rank, size, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	local, err := shmPeers(rv, cfg)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("init rank %d: %w", rv.Rank, err)
	}
	// TCP links this rank to the ranks of other hosts; the ranks of this
	// host talk through shared memory only (messages, the arenas, and the
	// monitor's control messages), so a host of k ranks needs no socket
	// among them.
	var unlinked []bool
	if len(local) > 1 {
		unlinked = make([]bool, size)
		for _, p := range local {
			unlinked[p] = true
		}
	}
	lazy := lazyLinks(cfg.LazyLinks, size-max(len(local), 1))
	cfg.LazyLinks = "0" // resolved: what the topology's discovery reads
	if lazy {
		cfg.LazyLinks = "1"
	}
	tcpEP, err := tcp.Connect(ctx, l, rv.Rank, rv.Addrs, tcp.Config{
		Secret:             rv.Secret,
		StreamsPerPeer:     cfg.StreamsPerPeer,
		ConnectTimeout:     cfg.ConnectTimeout,
		UnreachableTimeout: cfg.UnreachableTimeout,
		Logf:               tcpLogf, // refused strangers and failed links
		Unlinked:           unlinked,
		Lazy:               lazy,
		Advice:             func(err error) string { return connectAdvice(rv, err) },
	})
	if err != nil {
		return nil, fmt.Errorf("init rank %d of %d: %w%s", rv.Rank, size, err, connectAdvice(rv, err))
	}
	kinds := make([]string, size)
	for i := range kinds {
		kinds[i] = "tcp"
	}
	kinds[rv.Rank] = "self"
	if len(local) < 2 {
		c := New(tcpEP, cfg, kinds)
		c.noteLazy(tcpEP, lazy)
		c.watchPeers(c.links, jobID(rv))
		return c, nil
	}
	shmEP, err := shm.Connect(ctx, rv.Rank, local, size, jobID(rv), shm.Config{Proof: secretProof(rv)})
	if err != nil {
		_ = tcpEP.Close()
		return nil, fmt.Errorf("init rank %d: shared memory with ranks %v: %w%s", rv.Rank, local, err, connectAdvice(rv, err))
	}
	routes := make([]transport.Endpoint, size)
	for i := range routes {
		routes[i] = tcpEP
	}
	for _, p := range local {
		if p != rv.Rank {
			routes[p], kinds[p] = shmEP, "shm"
		}
	}
	c := New(hybrid.New(rv.Rank, size, routes), cfg, kinds) // closes both endpoints
	c.noteLazy(tcpEP, lazy)
	if cfg.ShmCollectives {
		c.shmJob = jobID(rv)
		// An arena per stream (each runs one op at a time) among the ranks
		// of this host: the whole op when they are the whole communicator,
		// else the intra-host phases of the hierarchical collectives.
		for i := range c.streams {
			a, err := arena.Connect(ctx, rv.Rank, local, fmt.Sprintf("%s-s%d", jobID(rv), i), arena.Config{})
			if err != nil {
				_ = c.Destroy()
				return nil, fmt.Errorf("init rank %d: shared-memory arena with ranks %v: %w", rv.Rank, local, err)
			}
			c.arenas[i] = a
			if len(local) == size {
				c.singleCopy[i], c.singleCopyGather[i] = singleCopies(cfg.SingleCopy)
			}
		}
		for _, p := range local {
			if p != rv.Rank {
				kinds[p] = "shm+arena"
			}
		}
	}
	// Dead peers are noticed on the route that carries them: a closed TCP
	// link, or shared memory's check of the peer's process.
	c.watchPeers(c.links, jobID(rv))
	return c, nil
}

// lazyAutoRemote is how many ranks on other hosts make HCCL_GO_LAZY_LINKS=auto
// link on first use: below it, linking every peer at init costs little and
// finds an unreachable peer before the first op.
const lazyAutoRemote = 64

// lazyLinks says whether the TCP links to remote ranks on other hosts are
// made on first use under setting (Config.LazyLinks).
func lazyLinks(setting string, remote int) bool {
	return setting == "1" || (setting == "auto" && remote > lazyAutoRemote)
}

// shmPeers lists the ranks (this one included) that share this rank's host
// and will talk through shared memory; nil when shared memory is not used.
func shmPeers(rv Rendezvous, cfg Config) ([]int, error) {
	if cfg.Transport == "tcp" || rv.HostIDs == nil {
		if cfg.Transport == "shm" && len(rv.Addrs) > 1 {
			return nil, fmt.Errorf("HCCL_GO_TRANSPORT=shm needs host identities from the rendezvous")
		}
		return nil, nil
	}
	var local []int
	for i, h := range rv.HostIDs {
		if h == rv.HostIDs[rv.Rank] {
			local = append(local, i)
		} else if cfg.Transport == "shm" {
			return nil, fmt.Errorf("HCCL_GO_TRANSPORT=shm but rank %d is on another host (%q, this host is %q)", i, h, rv.HostIDs[rv.Rank])
		}
	}
	return local, nil
}

// secretProof is what the ranks of a host show each other in their
// shared-memory segments instead of a TCP handshake: an HMAC of the job
// under its secret, so that ranks given different secrets fail at once.
func secretProof(rv Rendezvous) [32]byte {
	m := hmac.New(sha256.New, rv.Secret)
	m.Write([]byte("hccl-go/shm proof "))
	m.Write([]byte(jobID(rv)))
	var p [32]byte
	m.Sum(p[:0])
	return p
}

// jobID names this communicator's shared-memory segments: the same on every
// rank, and new for every communicator, since listener ports differ.
func jobID(rv Rendezvous) string {
	h := sha256.New()
	for _, a := range rv.Addrs {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
