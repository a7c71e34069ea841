package topo

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// ProbeLinks is what probing needs from the transport (NewEndpointLinks
// provides it over a transport.Endpoint; tests fake it).
type ProbeLinks interface {
	// Ping measures one round trip with peer: both ranks of the pair call
	// Ping(peer, nbytes) at the same point of the schedule; the lower rank
	// sends nbytes, the higher answers with a short acknowledgement, and
	// both return the same duration (the lower rank's measurement, which
	// it passes on), so that both take the same decisions afterwards.
	Ping(ctx context.Context, peer, nbytes int) (time.Duration, error)
	// Barrier returns once every rank has called it.
	Barrier(ctx context.Context) error
}

// ProbeConfig bounds the probe. The zero value takes every default.
type ProbeConfig struct {
	// Budget is the time the whole probe aims at (default 1 s). It is
	// split evenly among the waves of the schedule (a slot each, 7 slots
	// of 143 ms for 8 ranks on separate hosts). A pair's bandwidth
	// transfers grow while the next one is predicted to fit in its slot.
	// The caller's context is the hard limit.
	Budget time.Duration
	// LatencyPings small pings measure the latency (median; default 5).
	LatencyPings int
	// LatencyBytes is the size of a latency ping (default 8).
	LatencyBytes int
	// MinBandwidthBytes is the first bandwidth transfer (default 64 KiB);
	// transfers then grow 4 times at a time up to MaxBandwidthBytes
	// (default 4 MiB), and stop at the first that takes a quarter of the
	// slot.
	MinBandwidthBytes, MaxBandwidthBytes int
}

func (c ProbeConfig) withDefaults() (ProbeConfig, error) {
	if c.Budget == 0 {
		c.Budget = time.Second
	}
	if c.LatencyPings == 0 {
		c.LatencyPings = 5
	}
	if c.LatencyBytes == 0 {
		c.LatencyBytes = 8
	}
	if c.MinBandwidthBytes == 0 {
		c.MinBandwidthBytes = 64 << 10
	}
	if c.MaxBandwidthBytes == 0 {
		c.MaxBandwidthBytes = 4 << 20
	}
	if c.Budget < 0 || c.LatencyPings < 0 || c.LatencyBytes < 0 ||
		c.MinBandwidthBytes <= c.LatencyBytes || c.MaxBandwidthBytes < c.MinBandwidthBytes {
		return c, fmt.Errorf("probe: bad config %+v (want sizes latency < min bandwidth <= max bandwidth)", c)
	}
	return c, nil
}

// Probe runs rank's part of the link probe and returns its row: row[j] is
// the link to rank j (row[rank] is zero). Every rank of the communicator
// calls it at once with the same hostIDs (one per rank) and config.
//
// Pairs meet in the rounds of a round-robin tournament (Rounds: n-1
// rounds for even n), so all pairs of a round measure at once, each rank
// in one pair; a round whose cross-host pairs would share a host's NIC is
// split into waves (waves). A Barrier ends every wave. In its slot a pair
// measures latency (median of LatencyPings small round trips, halved) and
// bandwidth (transfers growing from MinBandwidthBytes, the largest one
// repeated up to twice while the slot allows; bytes over its fastest time
// less the small round trip).
//
// Assemble the rows of all ranks with GraphFromRows (after exchanging
// them, e.g. with EncodeRow and an all-gather). When one rank fails, its
// partners wait in Ping or Barrier until their ctx ends: give it a
// deadline (or cancel it) as for any collective.
func Probe(ctx context.Context, rank int, hostIDs []string, links ProbeLinks, cfg ProbeConfig) ([]Link, error) {
	n := len(hostIDs)
	if rank < 0 || rank >= n {
		return nil, fmt.Errorf("probe: rank %d out of range [0, %d)", rank, n)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	_, hostOf := GroupHosts(hostIDs)
	var schedule [][][2]int // the waves of all rounds, in order
	for _, round := range Rounds(n) {
		schedule = append(schedule, waves(round, hostOf)...)
	}
	row := make([]Link, n)
	if len(schedule) == 0 {
		return row, nil
	}
	slot := cfg.Budget / time.Duration(len(schedule))
	for w, wave := range schedule {
		for _, pair := range wave {
			if peer := partnerIn(pair, rank); peer >= 0 {
				if row[peer], err = measurePair(ctx, links, peer, slot, cfg); err != nil {
					return nil, fmt.Errorf("probe rank %d: link to rank %d: %w", rank, peer, err)
				}
			}
		}
		if err := links.Barrier(ctx); err != nil {
			return nil, fmt.Errorf("probe rank %d: barrier after wave %d of %d: %w", rank, w+1, len(schedule), err)
		}
	}
	return row, nil
}

// partnerIn is rank's partner in pair, or -1.
func partnerIn(pair [2]int, rank int) int {
	switch rank {
	case pair[0]:
		return pair[1]
	case pair[1]:
		return pair[0]
	}
	return -1
}

// bandwidthRepeats is how many times at most the largest bandwidth
// transfer is repeated (the fastest counts).
const bandwidthRepeats = 2

// measurePair measures the link to peer within slot. Both ranks run it
// with the same durations (Ping's contract), so they stop at the same
// transfer, and repeat it alike while the slot has room for that.
func measurePair(ctx context.Context, links ProbeLinks, peer int, slot time.Duration, cfg ProbeConfig) (Link, error) {
	var spent time.Duration
	rtts := make([]time.Duration, cfg.LatencyPings)
	for i := range rtts {
		d, err := links.Ping(ctx, peer, cfg.LatencyBytes)
		if err != nil {
			return Link{}, fmt.Errorf("latency ping: %w", err)
		}
		rtts[i], spent = d, spent+d
	}
	var rtt time.Duration
	if len(rtts) > 0 {
		slices.Sort(rtts)
		rtt = rtts[len(rtts)/2]
	}
	size := cfg.MinBandwidthBytes
	for {
		d, err := links.Ping(ctx, peer, size)
		if err != nil {
			return Link{}, fmt.Errorf("bandwidth transfer of %d bytes: %w", size, err)
		}
		spent += d
		next := min(4*size, cfg.MaxBandwidthBytes)
		// The next transfer's time, were the rate seen so far to hold
		// (larger transfers only amortise the latency better).
		predicted := rtt + time.Duration(float64(d-rtt)*float64(next)/float64(size))
		if size == next || d >= slot/4 || spent+predicted > slot {
			// Up to twice more at this size while the slot allows,
			// keeping the fastest: a process descheduled mid-transfer (a
			// loaded host) otherwise makes a link look several times
			// slower than it is.
			for range bandwidthRepeats {
				if spent+d > slot {
					break
				}
				again, err := links.Ping(ctx, peer, size)
				if err != nil {
					return Link{}, fmt.Errorf("bandwidth transfer of %d bytes: %w", size, err)
				}
				spent += again
				d = min(d, again)
			}
			transfer := d - rtt
			if transfer <= 0 {
				transfer = max(d, time.Nanosecond)
			}
			return Link{Latency: rtt / 2, Bandwidth: float64(size) / transfer.Seconds()}, nil
		}
		size = next
	}
}
