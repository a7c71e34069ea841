package intra

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hccl-go/hccl-go/transport/arena"
	"github.com/hccl-go/hccl-go/transport/cma"
)

// SingleCopy is the single-copy state of one arena: whether its
// all_reduces of 256 KiB to 1 MiB (tuning.singleCopyMin/Max) may read the peers' private buffers
// directly with process_vm_readv (see singlecopy_reduce.go), instead of
// staging every byte through the arena's shared memory.
//
// The kernel may refuse those calls (Yama ptrace_scope, seccomp, ranks of
// different users or PID namespaces), and all ranks must take the same
// protocol, so the ranks agree once: at the first reduction large enough,
// every rank publishes whether it is willing (enabled here and supported
// by the platform) and probes every peer; if any rank is unwilling or any
// probe fails, all of them stage through shared memory from then on.
//
// Make one per arena and pass it to every AllReduceWith on that arena, on
// every rank (a rank passing none where its peers pass one fails the call
// with ErrMismatch). Operations on an arena never overlap, and so never
// share its scratch buffers (512 or 768 KiB, allocated at the first use).
type SingleCopy struct {
	enabled bool
	state   atomic.Int32 // scUndecided, scOn or scOff
	why     error        // why off (written before state)
	// Test hooks: refuse makes this rank's probes fail as a kernel
	// refusing process_vm_readv would; beforeLastGather runs before the
	// gather of the last window.
	refuse           bool
	beforeLastGather func()

	// Scratch of the ops, allocated at first use: two inputs being
	// reduced, an accumulator where the result cannot go straight to recv,
	// the identity probe, and the peers' published buffers.
	in    [2][]byte
	acc   []byte
	probe []byte
	peers []peerBuffers
}

// States of the agreement.
const (
	scUndecided int32 = iota
	scOn
	scOff
)

// NewSingleCopy returns the state of a new arena. enabled false makes this
// rank unwilling, which turns single-copy off on all ranks at the first
// large reduction.
func NewSingleCopy(enabled bool) *SingleCopy {
	return &SingleCopy{enabled: enabled}
}

// State says what the ranks agreed: "undecided" (no large reduction yet),
// "on" or "off (why)".
func (s *SingleCopy) State() string {
	if s == nil {
		return "off"
	}
	switch s.state.Load() {
	case scOn:
		return "on"
	case scOff:
		return fmt.Sprintf("off (%v)", s.why)
	}
	return "undecided"
}

// usable reports whether a reduction of this size tries single-copy: all
// ranks answer alike, as they share the size, the tuning and the agreed
// state.
func (s *SingleCopy) usable(n, p int, t tuning) bool {
	return s != nil && p > 1 && t.singleCopyMin > 0 && n >= t.singleCopyMin && n <= t.singleCopyLimit(p) &&
		s.state.Load() != scOff
}

// The first epoch of a single-copy reduction publishes, in the inline slot
// (never smaller than 32 bytes, see arena.Config), where this rank's
// buffers are (addressBytes, four words):
//
//	pid (low 32 bits) | flags (high 32 bits)
//	address of send
//	address of recv (0 when this rank receives nothing)
//	address of these 32 bytes in the publisher's own mapping
//
// The last one lets a peer check, by reading it with process_vm_readv,
// that the pid is really the process that published it (not a process of
// another PID namespace, nor a stale one): it must read back these very
// bytes.
const addressBytes = 32

// Flags of the published word.
const (
	flagWilling = 1 << iota // enabled on this rank and supported here
	flagOn                  // this rank's state says the ranks agreed on
)

// peerBuffers is what a rank published.
type peerBuffers struct {
	pid        int
	flags      uint32
	send, recv uintptr
	self       uintptr // where the published bytes are in the peer
}

func (b peerBuffers) encode(dst []byte) {
	binary.LittleEndian.PutUint64(dst[0:], uint64(uint32(b.pid))|uint64(b.flags)<<32)
	binary.LittleEndian.PutUint64(dst[8:], uint64(b.send))
	binary.LittleEndian.PutUint64(dst[16:], uint64(b.recv))
	binary.LittleEndian.PutUint64(dst[24:], uint64(b.self))
}

func decodePeerBuffers(src []byte) peerBuffers {
	w := binary.LittleEndian.Uint64(src[0:])
	return peerBuffers{
		pid:   int(uint32(w)),
		flags: uint32(w >> 32),
		send:  uintptr(binary.LittleEndian.Uint64(src[8:])),
		recv:  uintptr(binary.LittleEndian.Uint64(src[16:])),
		self:  uintptr(binary.LittleEndian.Uint64(src[24:])),
	}
}

// address is where b starts in this process (0 when empty).
func address(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// errProbe is the cause of a failed identity probe.
var errProbe = errors.New("single-copy probe read other bytes than the peer published")

// exchange runs the first epoch of a single-copy reduction (stamped, with
// this rank's buffers) and, until the ranks have agreed, a second one with
// every rank's probe result. It returns whether single-copy goes ahead; on
// false the caller runs the shared-memory protocol, its stamp checked.
func (s *SingleCopy) exchange(ctx context.Context, a *arena.Arena, stamp arena.Stamp, send, recv []byte) (bool, error) {
	me, p := a.Index(), a.Size()
	e := a.Next()
	slot := a.Inline(me, e)[:addressBytes]
	own := peerBuffers{pid: os.Getpid(), send: address(send), recv: address(recv), self: address(slot)}
	if s.enabled && cma.Supported() {
		own.flags |= flagWilling
	}
	if s.state.Load() == scOn {
		own.flags |= flagOn
	}
	own.encode(slot)
	postFirst(a, e, stamp)
	if err := awaitFirst(ctx, a, e, stamp); err != nil {
		return false, err
	}
	// Read everything now: the slots are reused from epoch e+2 on.
	if cap(s.peers) < p {
		s.peers = make([]peerBuffers, p)
	}
	s.peers = s.peers[:p]
	willing, on := true, true
	for j := range p {
		s.peers[j] = decodePeerBuffers(a.Inline(j, e)[:addressBytes])
		willing = willing && s.peers[j].flags&flagWilling != 0
		on = on && s.peers[j].flags&flagOn != 0
	}
	switch {
	case !willing:
		s.off(errors.New("a rank is not willing (disabled, or unsupported platform)"))
		return false, nil
	case on:
		// Agreed before: a failed probe now means a peer went away.
		return true, s.probeAll(a)
	}
	return s.agree(ctx, a)
}

// agree probes every peer, exchanges the results in the next epoch and
// stores the common answer.
func (s *SingleCopy) agree(ctx context.Context, a *arena.Arena) (bool, error) {
	me, p := a.Index(), a.Size()
	probeErr := s.probeAll(a)
	ok := uint64(0)
	if probeErr == nil {
		ok = 1
	}
	e := a.Next()
	binary.LittleEndian.PutUint64(a.Inline(me, e), ok)
	a.PostInline(e)
	if err := a.WaitAllInline(ctx, e); err != nil {
		return false, err
	}
	for j := range p {
		if binary.LittleEndian.Uint64(a.Inline(j, e)) != 1 {
			if probeErr == nil {
				probeErr = fmt.Errorf("peer rank %d could not probe all its peers", a.Ranks()[j])
			}
			s.off(probeErr)
			return false, nil
		}
	}
	s.state.Store(scOn)
	return true, nil
}

// off records that the ranks agreed against single-copy, and why.
func (s *SingleCopy) off(why error) {
	s.why = why
	s.state.Store(scOff)
}

// probeAll reads every peer's published bytes back with process_vm_readv:
// that the call works and reaches the process that published them (the
// PID could name another process: another PID namespace, a stale rank).
func (s *SingleCopy) probeAll(a *arena.Arena) error {
	me := a.Index()
	if len(s.probe) < addressBytes {
		s.probe = make([]byte, addressBytes)
	}
	var want [addressBytes]byte
	ranks := a.Ranks()
	for j, b := range s.peers {
		if j == me {
			continue
		}
		if s.refuse {
			return peerCopyError(ranks[j], b.pid, syscall.EPERM)
		}
		if err := cma.ReadFast(b.pid, s.probe, b.self); err != nil {
			return peerCopyError(ranks[j], b.pid, err)
		}
		b.encode(want[:])
		if !bytes.Equal(s.probe, want[:]) {
			return fmt.Errorf("peer rank %d (pid %d): %w", ranks[j], b.pid, errProbe)
		}
	}
	return nil
}

// peerCopyError describes a failed transfer with peer rank (global) of
// process pid: a vanished process is the arena's peer-gone error.
func peerCopyError(rank, pid int, err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("single-copy: %w", &arena.PeerError{Rank: rank, Pid: pid, Err: arena.ErrPeerGone})
	}
	return fmt.Errorf("single-copy with peer rank %d (pid %d): %w", rank, pid, err)
}

// scratch returns the op's scratch buffers, each at least n bytes; acc
// only when withAcc.
func (s *SingleCopy) scratch(n int, withAcc bool) (in [2][]byte, acc []byte) {
	for i := range s.in {
		if len(s.in[i]) < n {
			s.in[i] = make([]byte, n)
		}
	}
	if withAcc && len(s.acc) < n {
		s.acc = make([]byte, n)
	}
	return s.in, s.acc
}
