package pgbackend

import (
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
)

// The flight recorder keeps the last N operations of a communicator (a ring,
// HCCL_GO_TRACE_SIZE), each with its description, route and the times it was
// queued, started and ended. A hang is diagnosed by comparing the ranks'
// dumps (trace.go writes them; `python -m torch_hccl_go.trace analyze`
// reads them): the rank that is behind is the one whose last op is older.
//
// It also tracks, per collective stream, the sequence numbers last started
// and ended, which peers ask for when an op times out (monitor.go).
//
// The times are the op's own clock readings (streams.Stamps, from the
// communicator's clock): the recorder reads no clock of its own.
//
// Export's C fast lane records its ops itself (lane.go), so the ring and
// the progress are words in a fixed layout (flightSlot, flightShared) under
// a lock C takes too (spinLock): strings are interned as small numbers,
// times are nanoseconds since the clock's epoch (0: not yet). Only errors
// stay Go strings: an op that fails always ends in Go.

// opState is where an op is in its life.
type opState uint8

const (
	stateQueued opState = iota
	stateRunning
	stateDone
	stateFailed
)

func (s opState) String() string {
	return [...]string{"queued", "running", "done", "failed"}[s]
}

// flightEntry is one recorded operation, as snapshot decodes it.
type flightEntry struct {
	id                       uint64
	op                       opDesc
	state                    opState
	enqueued, started, ended time.Time
	err                      string
}

// streamProgress is how far one collective stream has got.
type streamProgress struct {
	started, ended uint64    // sequence numbers of the last op started / ended
	since          time.Time // when the running op started (zero when idle)
}

// flightSlot is one entry of the ring, in the layout export's C fast lane
// writes (lane.h: hg_flight_slot; export checks that they agree).
type flightSlot struct {
	id    uint64
	seq   uint64
	bytes int64
	// desc packs the interned kind, route and algorithm names (a byte
	// each), then dtype+1, reduce op+1 and stream+1 (0: none); see
	// packDesc.
	desc     uint64
	state    uint64 // an opState
	rootPeer uint64 // uint32(root) | uint32(peer)<<32
	tag      uint64
	counts   uint64
	// Nanoseconds since the clock's epoch; 0: not yet.
	enqueued, started, ended int64
}

// flightProgress is streamProgress in words (since: as the slots' times).
type flightProgress struct {
	started, ended uint64
	since          int64
}

// flightShared is the recorder's state besides the ring, in the layout the
// C fast lane uses (lane.h: hg_flight).
type flightShared struct {
	lock     spinLock
	_        uint32
	next     uint64 // id of the next entry (ids start at 1)
	progress [numStreams]flightProgress
}

type flightRecorder struct {
	clock streams.Clock
	sh    *flightShared
	ring  []flightSlot // entry id sits at ring[id % len(ring)]; nil when disabled
	errs  []string     // error of ring[i] when it failed (written and read under sh.lock)
	names *names
}

func newFlightRecorder(size int, clock streams.Clock) *flightRecorder {
	r := &flightRecorder{clock: clock, sh: &flightShared{next: 1}, names: newNames()}
	if size > 0 {
		r.ring = make([]flightSlot, size)
		r.errs = make([]string, size)
	}
	return r
}

// add records an op queued at the given time and returns its id.
func (r *flightRecorder) add(op opDesc, at time.Time) uint64 {
	return r.record(op, stateQueued, at, time.Time{})
}

// addRunning records an op that starts as it is queued, at the given
// time, and returns its id.
func (r *flightRecorder) addRunning(op opDesc, at time.Time) uint64 {
	return r.record(op, stateRunning, at, at)
}

func (r *flightRecorder) record(op opDesc, state opState, at, started time.Time) uint64 {
	desc := r.names.pack(op)
	r.sh.lock.Lock()
	defer r.sh.lock.Unlock()
	id := r.sh.next
	r.sh.next++
	if r.ring != nil {
		r.ring[id%uint64(len(r.ring))] = flightSlot{
			id: id, seq: op.Seq, bytes: int64(op.Bytes), desc: desc, state: uint64(state),
			rootPeer: uint64(uint32(int32(op.Root))) | uint64(uint32(int32(op.Peer)))<<32,
			tag:      uint64(op.Tag), counts: op.Counts, enqueued: r.nanos(at), started: r.nanos(started),
		}
	}
	if state == stateRunning {
		r.startedLocked(op, started)
	}
	return id
}

// slot returns the live slot of id, or nil once the ring has overwritten
// it. The caller holds the lock.
func (r *flightRecorder) slot(id uint64) *flightSlot {
	if r.ring == nil {
		return nil
	}
	s := &r.ring[id%uint64(len(r.ring))]
	if s.id != id {
		return nil
	}
	return s
}

// start marks op id as running since now.
func (r *flightRecorder) start(id uint64, op opDesc, now time.Time) {
	r.sh.lock.Lock()
	defer r.sh.lock.Unlock()
	if s := r.slot(id); s != nil {
		s.state, s.started = uint64(stateRunning), r.nanos(now)
	}
	r.startedLocked(op, now)
}

func (r *flightRecorder) startedLocked(op opDesc, now time.Time) {
	if op.Stream >= 0 {
		p := &r.sh.progress[op.Stream]
		p.started, p.since = op.Seq, r.nanos(now)
	}
}

// end marks op id as finished at now with err.
func (r *flightRecorder) end(id uint64, op opDesc, err error, now time.Time) {
	var msg string
	if err != nil {
		msg = err.Error()
	}
	r.sh.lock.Lock()
	defer r.sh.lock.Unlock()
	if s := r.slot(id); s != nil {
		s.state, s.ended = uint64(stateDone), r.nanos(now)
		if err != nil {
			s.state = uint64(stateFailed)
			r.errs[id%uint64(len(r.ring))] = msg
		}
	}
	if op.Stream >= 0 {
		p := &r.sh.progress[op.Stream]
		p.ended, p.since = op.Seq, 0
	}
}

// snapshot returns the recorded entries, oldest first, and how many ops
// were recorded in all (older ones were overwritten).
func (r *flightRecorder) snapshot() ([]flightEntry, uint64) {
	r.sh.lock.Lock()
	total := r.sh.next - 1
	var slots []flightSlot
	var errs []string
	if r.ring != nil {
		first := uint64(1)
		if total > uint64(len(r.ring)) {
			first = total - uint64(len(r.ring)) + 1
		}
		for id := first; id <= total; id++ {
			if s := r.slot(id); s != nil {
				slots = append(slots, *s)
				errs = append(errs, r.errs[id%uint64(len(r.ring))])
			}
		}
	}
	r.sh.lock.Unlock()
	out := make([]flightEntry, len(slots))
	for i, s := range slots {
		out[i] = r.decode(s, errs[i])
	}
	return out, total
}

func (r *flightRecorder) decode(s flightSlot, err string) flightEntry {
	e := flightEntry{
		id: s.id, op: r.names.unpack(s.desc), state: opState(s.state),
		enqueued: r.at(s.enqueued), started: r.at(s.started), ended: r.at(s.ended),
	}
	e.op.Seq, e.op.Bytes, e.op.Counts, e.op.Tag = s.seq, int(s.bytes), s.counts, uint32(s.tag)
	e.op.Root, e.op.Peer = int(int32(uint32(s.rootPeer))), int(int32(uint32(s.rootPeer>>32)))
	if e.state == stateFailed {
		e.err = err
	}
	return e
}

// streams returns the progress of every collective stream.
func (r *flightRecorder) streams() [numStreams]streamProgress {
	r.sh.lock.Lock()
	ps := r.sh.progress
	r.sh.lock.Unlock()
	var out [numStreams]streamProgress
	for i, p := range ps {
		out[i] = streamProgress{started: p.started, ended: p.ended, since: r.at(p.since)}
	}
	return out
}

// nanos is t as the slots keep it: nanoseconds since the clock's epoch, at
// least 1 (0 means none).
func (r *flightRecorder) nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(int64(r.clock.Offset(t)), 1)
}

// at reads a time back from nanos.
func (r *flightRecorder) at(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return r.clock.At(time.Duration(ns))
}

// names interns the strings of op descriptions (kind, route, algorithm)
// as the bytes of a slot's desc; 0 is the empty string. A recorder meets
// a few dozen names at most; past 255 they are recorded as "?".
type names struct {
	mu    sync.RWMutex
	index map[string]uint8
	list  []string
}

func newNames() *names {
	return &names{index: map[string]uint8{"": 0, "?": 1}, list: []string{"", "?"}}
}

// id returns the number of s, interning it on first use.
func (n *names) id(s string) uint8 {
	n.mu.RLock()
	i, ok := n.index[s]
	n.mu.RUnlock()
	if ok {
		return i
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if i, ok := n.index[s]; ok {
		return i
	}
	if len(n.list) > 255 {
		return n.index["?"]
	}
	i = uint8(len(n.list))
	n.index[s] = i
	n.list = append(n.list, s)
	return i
}

func (n *names) name(i uint8) string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if int(i) >= len(n.list) {
		return "?"
	}
	return n.list[i]
}

// Bit positions of a slot's desc.
const (
	descKind   = 0
	descRoute  = 8
	descAlgo   = 16
	descDType  = 24
	descRedOp  = 32
	descStream = 40
	descWire   = 48
)

// pack encodes op's kind, route, algorithm, dtype, reduce op, stream and
// wire compression.
func (n *names) pack(op opDesc) uint64 {
	return uint64(n.id(op.Kind))<<descKind | uint64(n.id(op.Route))<<descRoute |
		uint64(n.id(string(op.Algo)))<<descAlgo | uint64(uint8(op.DType+1))<<descDType |
		uint64(uint8(op.RedOp+1))<<descRedOp | uint64(uint8(op.Stream+1))<<descStream |
		uint64(n.id(string(op.Compression)))<<descWire
}

// unpack decodes what pack encoded (the other fields are the slot's own).
func (n *names) unpack(d uint64) opDesc {
	field := func(shift int) uint8 { return uint8(d >> shift) }
	return opDesc{
		Kind: n.name(field(descKind)), Route: n.name(field(descRoute)),
		Algo:  collectives.Algorithm(n.name(field(descAlgo))),
		DType: reduce.DType(field(descDType)) - 1, RedOp: reduce.Op(field(descRedOp)) - 1,
		Stream:      int(field(descStream)) - 1,
		Compression: collectives.Compression(n.name(field(descWire))),
	}
}
