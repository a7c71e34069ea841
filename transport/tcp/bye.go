package tcp

// A peer closing its endpoint on purpose writes a goodbye frame on each of
// its streams, after whatever it wrote there before, then closes them. The
// streams are read independently, so the goodbye on one stream may be read
// before the last frames of the peer's final messages on another: a rank
// that finished a barrier closes while its peer's reader of stream 0 is
// still catching up. Failing the link at the first goodbye would close the
// connections under those frames and fail the receive waiting for them, so
// a goodbye ends only its own stream and the link ends with the last one.

// saidBye records the goodbye frame read on stream index and reports whether
// the peer has now said goodbye on every stream, so that the link is over.
func (l *link) saidBye(index int) bool {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	l.byes++
	if index == 0 {
		// Start frames travel on stream 0 only: data frames still waiting
		// for theirs would wait forever.
		l.startsEnd = true
		l.rcond.Broadcast()
	}
	return l.byes == len(l.streams)
}

// byeHeard reports whether the peer said goodbye on some stream.
func (l *link) byeHeard() bool {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	return l.byes > 0
}
