package arena

import (
	"fmt"
	"time"
)

// Config tunes an Arena. The zero value selects the defaults. InlineBytes
// and DataBytes must be the same on every rank of a host (Connect checks).
type Config struct {
	// Dir holds the segments (default /dev/shm): a tmpfs shared by all
	// ranks of the host.
	Dir string
	// InlineBytes is the payload capacity of one inline slot (default
	// 4 KiB, rounded up so that the slot fills whole cache lines). The
	// first 32 bytes share the cache line of the slot's flag and stamp.
	InlineBytes int
	// DataBytes is the size of the data area of each rank, split into two
	// halves by epoch parity (default 8 MiB, rounded up to whole pages).
	DataBytes int
	// SpinTime is how long a waiter polls without yielding the processor
	// (default 2µs; negative: no spinning). Short, because a peer that is
	// late by more is usually not running, often waiting for this rank's
	// CPU (measured on a loaded 2-core host: 20µs spins made every 8-byte
	// all_reduce cost two of them whenever the scheduler put both ranks on
	// one CPU). After it, polls yield the processor, which costs little
	// when nothing else wants it. When the local ranks outnumber the CPUs
	// (runtime.NumCPU), waits spin at most 1µs.
	SpinTime time.Duration
	// YieldTime is how long a waiter then polls while yielding the
	// processor between polls, before it sleeps on a futex (default 1ms;
	// negative: none).
	YieldTime time.Duration
	// LivenessInterval is how often a waiter checks that the peers it
	// waits for are still alive, and the longest one futex sleep lasts
	// (default 100ms).
	LivenessInterval time.Duration
	// FailureGrace is how long a wait whose context's deadline has passed
	// keeps watching the live peer it waits for when that peer is away
	// (BeginAway), in case it fails the operation itself and publishes why
	// (Fail) (default 1s; negative: none). The ranks of an op share its
	// timeout: a peer stuck on a rank of another host times out at about
	// the same moment, and its error names that rank where this one's
	// could name only the peer.
	FailureGrace time.Duration
	// Liveness, when set, says whether local rank j is alive, in place of
	// the lock each rank holds on its segment file: an arena of a subset of
	// another arena's ranks asks that one (a split communicator's). The
	// arena then closes its segment files once every rank has mapped them
	// and holds no file descriptor.
	Liveness func(j int) (bool, error)
}

const (
	defaultDir              = "/dev/shm"
	defaultInlineBytes      = 4 << 10
	defaultDataBytes        = 8 << 20
	defaultSpinTime         = 2 * time.Microsecond
	defaultYieldTime        = time.Millisecond
	defaultLivenessInterval = 100 * time.Millisecond
	defaultFailureGrace     = time.Second

	maxInlineBytes = 1 << 20
	maxDataBytes   = 1 << 34
	minDataBytes   = 2 * pageSize
)

// withDefaults fills unset fields, rounds sizes and checks ranges.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		c.Dir = defaultDir
	}
	if c.InlineBytes == 0 {
		c.InlineBytes = defaultInlineBytes
	}
	if c.DataBytes == 0 {
		c.DataBytes = defaultDataBytes
	}
	if c.SpinTime == 0 {
		c.SpinTime = defaultSpinTime
	}
	if c.YieldTime == 0 {
		c.YieldTime = defaultYieldTime
	}
	if c.LivenessInterval == 0 {
		c.LivenessInterval = defaultLivenessInterval
	}
	if c.FailureGrace == 0 {
		c.FailureGrace = defaultFailureGrace
	}
	c.FailureGrace = max(c.FailureGrace, 0)
	c.SpinTime = max(c.SpinTime, 0)
	c.YieldTime = max(c.YieldTime, 0)
	switch {
	case c.InlineBytes < 0 || c.InlineBytes > maxInlineBytes:
		return c, fmt.Errorf("arena config: InlineBytes %d out of range [0, %d]", c.InlineBytes, maxInlineBytes)
	case c.DataBytes < 0 || c.DataBytes > maxDataBytes:
		return c, fmt.Errorf("arena config: DataBytes %d out of range [0, %d]", c.DataBytes, maxDataBytes)
	case c.LivenessInterval < 0:
		return c, fmt.Errorf("arena config: negative LivenessInterval %v", c.LivenessInterval)
	}
	// An inline slot is a flag word, a stamp and the payload, in whole
	// lines.
	c.InlineBytes = roundUp(c.InlineBytes+flagBytes+stampBytes, lineSize) - flagBytes - stampBytes
	c.DataBytes = max(roundUp(c.DataBytes, 2*pageSize), minDataBytes)
	return c, nil
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }
