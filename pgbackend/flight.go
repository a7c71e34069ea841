package pgbackend

import (
	"sync"
	"time"
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

// flightEntry is one recorded operation.
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

type flightRecorder struct {
	mu       sync.Mutex
	ring     []flightEntry // entry id sits at ring[id % len(ring)]; nil when disabled
	next     uint64        // id of the next entry (ids start at 1)
	progress [numStreams]streamProgress
}

func newFlightRecorder(size int) *flightRecorder {
	r := &flightRecorder{next: 1}
	if size > 0 {
		r.ring = make([]flightEntry, size)
	}
	return r
}

// add records an op queued at the given time and returns its id.
func (r *flightRecorder) add(op opDesc, at time.Time) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	if r.ring != nil {
		r.ring[id%uint64(len(r.ring))] = flightEntry{id: id, op: op, state: stateQueued, enqueued: at}
	}
	return id
}

// entry returns the live entry of id, or nil once the ring has overwritten
// it. The caller holds mu.
func (r *flightRecorder) entry(id uint64) *flightEntry {
	if r.ring == nil {
		return nil
	}
	e := &r.ring[id%uint64(len(r.ring))]
	if e.id != id {
		return nil
	}
	return e
}

// start marks op id as running since now.
func (r *flightRecorder) start(id uint64, op opDesc, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.entry(id); e != nil {
		e.state, e.started = stateRunning, now
	}
	if op.Stream >= 0 {
		p := &r.progress[op.Stream]
		p.started, p.since = op.Seq, now
	}
}

// end marks op id as finished at now with err.
func (r *flightRecorder) end(id uint64, op opDesc, err error, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.entry(id); e != nil {
		e.state, e.ended = stateDone, now
		if err != nil {
			e.state, e.err = stateFailed, err.Error()
		}
	}
	if op.Stream >= 0 {
		p := &r.progress[op.Stream]
		p.ended, p.since = op.Seq, time.Time{}
	}
}

// snapshot returns the recorded entries, oldest first, and how many ops
// were recorded in all (older ones were overwritten).
func (r *flightRecorder) snapshot() ([]flightEntry, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.next - 1
	if r.ring == nil {
		return nil, total
	}
	first := uint64(1)
	if total > uint64(len(r.ring)) {
		first = total - uint64(len(r.ring)) + 1
	}
	out := make([]flightEntry, 0, total-first+1)
	for id := first; id <= total; id++ {
		if e := r.entry(id); e != nil {
			out = append(out, *e)
		}
	}
	return out, total
}

// streams returns the progress of every collective stream.
func (r *flightRecorder) streams() [numStreams]streamProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress
}
