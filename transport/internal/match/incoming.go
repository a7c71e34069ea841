package match

// Incoming is one message whose bytes are arriving. Writers take a range with
// Acquire, fill it, and give it back with Release; ranges from several
// goroutines may land concurrently as long as they do not overlap.
type Incoming struct {
	box  *Box
	peer int
	n    int

	// Guarded by box.mu.
	target   []byte   // where bytes land: a Recv's buffer, own storage, or nil (discard)
	own      bool     // target is storage of this Incoming (no Recv yet)
	req      *request // the Recv whose buffer is target
	waiter   *request // a Recv that claimed this message while it was landing
	landed   int      // bytes released so far
	writers  int      // Acquires not yet Released
	active   []Interrupter
	complete bool
	failed   error
}

// Len is the message length in bytes.
func (in *Incoming) Len() int { return in.n }

// Acquire returns the slice where bytes [off, off+cnt) of the message land,
// or nil when they are to be discarded (the Recv gave up or the message was
// refused). w, if not nil, is interrupted when the receiver must stop the
// write early. Every Acquire must be paired with one Release.
func (in *Incoming) Acquire(off, cnt int, w Interrupter) []byte {
	b := in.box
	b.mu.Lock()
	defer b.mu.Unlock()
	in.writers++
	if w != nil {
		in.active = append(in.active, w)
	}
	if in.target == nil {
		return nil
	}
	return in.target[off : off+cnt : off+cnt]
}

// Release reports that cnt bytes of the range taken by the matching Acquire
// landed (cnt may be short after an interruption; Acquire the rest again).
func (in *Incoming) Release(cnt int, w Interrupter) {
	b := in.box
	b.mu.Lock()
	defer b.mu.Unlock()
	in.writers--
	if w != nil {
		for i, a := range in.active {
			if a == w {
				last := len(in.active) - 1
				in.active[i] = in.active[last]
				in.active[last] = nil
				in.active = in.active[:last]
				break
			}
		}
	}
	in.landed += cnt
	if in.landed == in.n && in.failed == nil && !in.complete {
		in.finish()
		delete(b.landing, in)
	}
	if in.writers == 0 && in.target == nil {
		b.idle.Broadcast()
	}
}

// finish marks the message complete and wakes its Recv. Called with box.mu held.
func (in *Incoming) finish() {
	in.complete = true
	if in.req != nil {
		in.req.fire(nil)
	}
	if in.waiter != nil {
		in.waiter.fire(nil)
	}
}
