package main

import (
	"sync"

	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// table maps opaque 64-bit handles to Go objects, so that no Go pointer
// ever crosses into C. Handle 0 is never issued.
type table[T any] struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]T
}

func newTable[T any]() *table[T] { return &table[T]{m: map[uint64]T{}} }

func (t *table[T]) put(v T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.m[t.next] = v
	return t.next
}

func (t *table[T]) get(id uint64) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[id]
	return v, ok
}

func (t *table[T]) remove(id uint64) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[id]
	delete(t.m, id)
	return v, ok
}

type commEntry struct {
	c    *pgbackend.Communicator
	lane *laneReg // its C fast lane (lane.go); nil: none

	mu      sync.Mutex
	lastErr string
}

func (e *commEntry) setError(msg string) {
	e.mu.Lock()
	e.lastErr = msg
	e.mu.Unlock()
}

func (e *commEntry) lastError() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

type workEntry struct {
	w    *streams.Work
	comm *commEntry
}

// The handle tables of the process. They are the only package-level state:
// any number of communicators live in them side by side.
var (
	comms     = newTable[*commEntry]()
	works     = newTable[*workEntry]()
	listeners = newTable[*tcp.Listener]()

	globalErrMu sync.Mutex
	globalErr   string // last error of calls that have no communicator
)
