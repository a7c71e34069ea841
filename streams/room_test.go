package streams

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoom(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *room)
	}{
		{"places up to the depth", func(t *testing.T, r *room) {
			for i := range 3 {
				require.True(t, r.tryTake(), "place %d", i)
			}
			assert.False(t, r.tryTake(), "full")
			r.give()
			assert.True(t, r.tryTake(), "a place given back")
		}},
		{"a waiter gets a place given back", func(t *testing.T, r *room) {
			for range 3 {
				require.True(t, r.tryTake())
			}
			got := make(chan error, 1)
			go func() { got <- r.take(context.Background()) }()
			require.Eventually(t, func() bool { return r.waiters.Load() == 1 }, waitLimit, time.Millisecond)
			require.Never(t, func() bool { return len(got) > 0 }, 10*time.Millisecond, time.Millisecond,
				"took a place in a full room")
			r.give()
			select {
			case err := <-got:
				require.NoError(t, err)
			case <-time.After(waitLimit):
				t.Fatal("the waiter did not get the place")
			}
			assert.EqualValues(t, 3, r.taken.Load())
		}},
		{"a wait ends with its context, with the cause", func(t *testing.T, r *room) {
			for range 3 {
				require.True(t, r.tryTake())
			}
			cause := errors.New("gave up")
			ctx, cancel := context.WithCancelCause(context.Background())
			got := make(chan error, 1)
			go func() { got <- r.take(ctx) }()
			// Cancel once the taker waits.
			require.Eventually(t, func() bool { return r.waiters.Load() == 1 }, waitLimit, time.Millisecond)
			cancel(cause)
			select {
			case err := <-got:
				require.ErrorIs(t, err, cause)
			case <-time.After(waitLimit):
				t.Fatal("the wait did not end with its context")
			}
			assert.EqualValues(t, 3, r.taken.Load(), "no place taken")
			assert.Zero(t, r.waiters.Load())
		}},
		{"many takers never hold more than the depth", func(t *testing.T, r *room) {
			var held, most atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 500 {
						if !assert.NoError(t, r.take(context.Background())) {
							return
						}
						n := held.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						held.Add(-1)
						r.give()
					}
				})
			}
			wg.Wait()
			assert.LessOrEqual(t, most.Load(), int64(3))
			assert.Zero(t, r.taken.Load())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newRoom(3)) })
	}
}
