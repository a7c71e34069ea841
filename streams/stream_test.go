package streams

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStreamRunsInOrder(t *testing.T) {
	s := New("test", 4) // smaller than the op count: exercises back-pressure
	defer s.Close()
	var mu sync.Mutex
	var order []int
	var works []*Work
	for i := 0; i < 100; i++ {
		works = append(works, s.Submit("op", func() error {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return nil
		}))
	}
	for _, w := range works {
		require.NoError(t, w.Wait(context.Background(), 5*time.Second))
	}
	for i := range order {
		assert.Equal(t, i, order[i])
	}
}

func TestStreamsOverlap(t *testing.T) {
	a, b := New("a", 0), New("b", 0)
	defer a.Close()
	defer b.Close()
	release := make(chan struct{})
	slow := a.Submit("slow", func() error { <-release; return nil })
	fast := b.Submit("fast", func() error { return nil })
	require.NoError(t, fast.Wait(context.Background(), 5*time.Second), "an op on another stream must not wait behind a blocked one")
	done, _ := slow.Test()
	assert.False(t, done)
	close(release)
	require.NoError(t, slow.Wait(context.Background(), 5*time.Second))
}

func TestWorkStatusAndCallbacks(t *testing.T) {
	s := New("s", 0)
	defer s.Close()
	boom := errors.New("boom")
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"success", func() error { return nil }, ""},
		{"error", func() error { return boom }, "boom"},
		{"panic", func() error { panic("bad index") }, "panic: bad index"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan error, 2)
			w := s.Submit(tc.name, tc.run)
			w.OnComplete(func(err error) { got <- err })
			err := w.Wait(context.Background(), 5*time.Second)
			cbErr := <-got
			// A callback added after completion runs at once.
			w.OnComplete(func(err error) { got <- err })
			lateErr := <-got
			if tc.want == "" {
				assert.NoError(t, err)
				assert.NoError(t, cbErr)
				assert.NoError(t, lateErr)
				return
			}
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, cbErr, tc.want)
			assert.ErrorContains(t, lateErr, tc.want)
		})
	}
}

func TestWaitTimeoutAndAfter(t *testing.T) {
	a, b := New("a", 0), New("b", 0)
	defer a.Close()
	defer b.Close()
	release := make(chan struct{})
	first := a.Submit("first", func() error { <-release; return nil })
	err := first.Wait(context.Background(), 20*time.Millisecond)
	require.ErrorIs(t, err, ErrTimeout)

	// An op on b ordered after first (an event) must not start before it.
	var ran bool
	b.After(first)
	second := b.Submit("second", func() error {
		done, _ := first.Test()
		ran = done
		return nil
	})
	close(release)
	require.NoError(t, second.Wait(context.Background(), 5*time.Second))
	assert.True(t, ran)
}

func TestSubmitAfterClose(t *testing.T) {
	s := New("s", 0)
	s.Close()
	s.Close() // idempotent
	w := s.Submit("late", func() error { return nil })
	require.ErrorIs(t, w.Wait(context.Background(), time.Second), ErrStreamClosed)
}

func TestRunInlineKeepsStreamOrder(t *testing.T) {
	s := New("s", 0)
	defer s.Close()
	release := make(chan struct{})
	first := s.Submit("first", func() error { <-release; return nil })
	var secondRanInline bool
	second := s.Submit("second", func() error { return nil })
	// first is running (or about to): second is not next in line yet.
	assert.False(t, second.RunInline())
	close(release)
	require.NoError(t, first.Wait(context.Background(), 5*time.Second))
	// Now second may run inline, unless the stream's goroutine took it.
	secondRanInline = second.RunInline()
	require.NoError(t, second.Wait(context.Background(), 5*time.Second))
	assert.False(t, second.RunInline(), "a work runs once")
	t.Logf("second ran inline: %v", secondRanInline)

	// Many ops, each waited on by a caller that tries to run it inline:
	// every op runs exactly once, in order.
	var mu sync.Mutex
	var order []int
	for i := 0; i < 200; i++ {
		w := s.Submit("op", func() error { mu.Lock(); order = append(order, i); mu.Unlock(); return nil })
		w.RunInline()
		require.NoError(t, w.Wait(context.Background(), 5*time.Second))
	}
	require.Len(t, order, 200)
	for i, v := range order {
		require.Equal(t, i, v)
	}
}
