package transport

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// AnySource is implemented by endpoints that can receive from whichever
// peer's message comes first: torch's recv without src, MPI_ANY_SOURCE.
type AnySource interface {
	// TryRecvAny receives into buf a message under tag that has begun to
	// arrive from a peer that accept admits, and returns that peer. ok is
	// false when none has (nothing is consumed); err then reports the link
	// to an admitted peer that failed, or a closed endpoint. A message still
	// arriving is waited for until ctx ends. Sizes must match exactly, as
	// for Recv.
	TryRecvAny(ctx context.Context, tag Tag, buf []byte, accept func(peer int) bool) (peer int, ok bool, err error)
}

// ErrNoAnySource is returned by RecvAny for an endpoint that cannot
// receive from any source.
var ErrNoAnySource = errors.New("transport: endpoint cannot receive from any source")

// Polling bounds of RecvAny: it yields between tries for anySpin, then
// sleeps, doubling the sleep up to anyMaxSleep. A wildcard receive is
// rare next to matched ones, so it polls rather than asking every
// matcher for a wake-up that the matched path would pay for.
const (
	anySpin     = 50 * time.Microsecond
	anyMinSleep = 10 * time.Microsecond
	anyMaxSleep = time.Millisecond
)

// RecvAny receives into buf the next message under tag from whichever
// admitted peer sends first, waiting until ctx ends, and returns that peer.
// Between two receives that could match the same message, a receive that
// names its peer may take it first even if RecvAny was posted earlier.
func RecvAny(ctx context.Context, ep Endpoint, tag Tag, buf []byte, accept func(peer int) bool) (int, error) {
	a, ok := ep.(AnySource)
	if !ok {
		return -1, fmt.Errorf("%w (%T)", ErrNoAnySource, ep)
	}
	start := time.Now()
	sleep := anyMinSleep
	for {
		peer, ok, err := a.TryRecvAny(ctx, tag, buf, accept)
		if ok || err != nil {
			return peer, err
		}
		if err := ctx.Err(); err != nil {
			return -1, fmt.Errorf("recv from any rank tag %#x: %w", uint64(tag), err)
		}
		if time.Since(start) < anySpin {
			runtime.Gosched()
			continue
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return -1, fmt.Errorf("recv from any rank tag %#x: %w", uint64(tag), ctx.Err())
		case <-t.C:
		}
		sleep = min(2*sleep, anyMaxSleep)
	}
}
