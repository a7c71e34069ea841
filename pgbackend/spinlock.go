package pgbackend

import (
	"runtime"
	"sync/atomic"
)

// spinLock is a lock that code outside Go takes too (export's C fast lane,
// on the words it shares with the communicator, see lane.go): one word,
// taken by a compare-and-swap from 0 to 1 and released by storing 0. Every
// holder keeps it for a few stores, so a waiter spins a little, then lets
// other goroutines run between tries. Go's own callers mostly meet each
// other on a sync.Mutex first, and the C side gives up rather than wait
// (it falls back to Go's path).
type spinLock struct{ w atomic.Uint32 }

func (l *spinLock) Lock() {
	for i := 0; !l.w.CompareAndSwap(0, 1); i++ {
		if i >= spinTries {
			runtime.Gosched()
		}
	}
}

func (l *spinLock) Unlock() { l.w.Store(0) }

// spinTries is how often Lock tries before it yields between tries.
const spinTries = 64
