package shm

import (
	"fmt"
	"time"
)

// Config tunes an shm endpoint. The zero value selects the defaults. Every
// rank of a host must use the same Slots and SlotSize (Connect checks this).
type Config struct {
	// Dir holds the segments (default /dev/shm). It must be a tmpfs shared
	// by all ranks of the host.
	Dir string
	// Slots is the number of slots of each (sender, receiver) ring
	// (default 64, fewer on hosts of more than 8 ranks: defaultSlotsFor).
	Slots int
	// SlotSize is the payload capacity of one slot in bytes, rounded up to
	// a multiple of 64 (default 64 KiB). Larger messages span several slots.
	SlotSize int
	// SpinTime is how long a waiter polls without yielding the processor
	// before it starts yielding (default 10µs; negative: no spinning).
	SpinTime time.Duration
	// YieldTime is how long a waiter then polls, yielding the processor to
	// other goroutines and threads between polls, before it sleeps on a
	// futex (default 200µs; negative: none).
	YieldTime time.Duration
	// LivenessInterval is how often peers are checked for death or Close,
	// and the longest a futex sleep lasts (default 100ms).
	LivenessInterval time.Duration
	// HeartbeatTimeout declares a peer dead when its heartbeat stops for
	// this long; used only for peers in another PID namespace, whose
	// process cannot be watched directly (default 10s).
	HeartbeatTimeout time.Duration
	// DisableCMA turns off single-copy transfers of large messages with
	// process_vm_readv, so that they always go through the ring.
	DisableCMA bool
	// CMAThreshold is the smallest message sent single-copy (default
	// 256 KiB; never below 256 KiB, so that the sender's buffer is on the
	// Go heap or outside it, never on a goroutine stack that may move).
	CMAThreshold int

	// Proof is what this rank writes into its segment and expects in every
	// peer's: a digest of the job secret (the caller's choice; the zero
	// value is a proof like any other). A peer whose proof differs fails
	// Connect at once with ErrBadSecret, naming it, instead of the ranks
	// waiting out the timeout. Segments are private to the user (mode
	// 0600), so it is read by no one else.
	Proof [proofSize]byte

	// forceCMARefusal makes this rank's single-copy reads fail as if the
	// kernel refused them, so that tests exercise the fallback.
	forceCMARefusal bool
}

const (
	defaultDir              = "/dev/shm"
	defaultSlots            = 64
	defaultSlotSize         = 64 << 10
	defaultSpinTime         = 10 * time.Microsecond
	defaultYieldTime        = 200 * time.Microsecond
	defaultLivenessInterval = 100 * time.Millisecond
	defaultHeartbeatTimeout = 10 * time.Second
	minCMAThreshold         = 256 << 10
	slotAlign               = 64 // slot bodies stay cache-line aligned

	maxSlots    = 1 << 20
	minSlotSize = 64
	maxSlotSize = 1 << 30
)

// proofSize is the length of Config.Proof.
const proofSize = 32

// withDefaults fills unset fields and checks the others.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		c.Dir = defaultDir
	}
	if c.Slots == 0 {
		c.Slots = defaultSlots
	}
	if c.SlotSize == 0 {
		c.SlotSize = defaultSlotSize
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
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = defaultHeartbeatTimeout
	}
	c.SpinTime = max(c.SpinTime, 0)
	c.YieldTime = max(c.YieldTime, 0)
	if c.CMAThreshold < minCMAThreshold {
		c.CMAThreshold = minCMAThreshold
	}
	switch {
	case c.Slots < 2 || c.Slots > maxSlots:
		return c, fmt.Errorf("shm config: Slots %d out of range [2, %d]", c.Slots, maxSlots)
	case c.SlotSize < minSlotSize || c.SlotSize > maxSlotSize:
		return c, fmt.Errorf("shm config: SlotSize %d out of range [%d, %d]", c.SlotSize, minSlotSize, maxSlotSize)
	case c.LivenessInterval < 0 || c.HeartbeatTimeout < 0:
		return c, fmt.Errorf("shm config: negative LivenessInterval or HeartbeatTimeout")
	}
	c.SlotSize = (c.SlotSize + slotAlign - 1) &^ (slotAlign - 1)
	return c, nil
}
