package streams

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHoldOnlyWhenIdle(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	s := sch.NewStream("s", 0, 0)
	release := make(chan struct{})
	var r recorder
	w := s.Submit("a", r.op("a", release))
	require.False(t, s.TryHold(), "a stream with an operation running must not be held")
	close(release)
	waitAll(t, w)
	require.Eventually(t, s.TryHold, waitLimit, time.Millisecond, "an idle stream must be held")
	require.False(t, s.TryHold(), "a held stream must not be held twice")
	s.Release()
	require.True(t, s.TryHold(), "a released stream must be held again")
	s.Release()
}

func TestHeldStreamStartsNothingUntilReleased(t *testing.T) {
	cases := []struct {
		name   string
		inline bool // the waiter tries to run the op itself
	}{{"worker", false}, {"inline", true}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sch := NewScheduler("t", Config{InlineGrace: time.Microsecond, SyncGrace: time.Microsecond})
			defer sch.Close()
			s := sch.NewStream("s", 0, 0)
			require.True(t, s.TryHold())
			var r recorder
			w := s.Submit("a", r.op("a", nil))
			w.Start() // no grace: a worker would start it at once
			if c.inline {
				require.False(t, w.RunInline(), "a held stream's op must not run inline")
			}
			require.Never(t, func() bool { return len(r.get()) > 0 }, 20*time.Millisecond, time.Millisecond,
				"an op of a held stream started")
			done, _ := w.Test()
			require.False(t, done)
			s.Release()
			waitAll(t, w)
			require.Equal(t, []string{"start a", "end a"}, r.get())
			require.Eventually(t, s.TryHold, waitLimit, time.Millisecond, "the stream is idle again")
			s.Release()
		})
	}
}

// A holder outside Go works on the word itself: it takes it from 0 to
// holdHeld, clears that bit to let go, and kicks when it finds holdBusy.
func TestHoldWordAndKick(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	s := sch.NewStream("s", 0, 0)
	word := s.HoldWord()
	require.True(t, word.CompareAndSwap(0, holdHeld))
	var r recorder
	w := s.Submit("a", r.op("a", nil))
	old := word.And(^holdHeld)
	require.NotZero(t, old&holdBusy, "an op queued during the hold must show in the word")
	s.Kick()
	require.NoError(t, w.Wait(context.Background(), waitLimit))
	require.Equal(t, []string{"start a", "end a"}, r.get())
}

// Holders and queued operations never overlap, and nothing queued is left
// behind, however their calls interleave.
func TestHoldersAndOperationsNeverOverlap(t *testing.T) {
	sch := NewScheduler("t", Config{InlineGrace: time.Microsecond, SyncGrace: time.Microsecond})
	defer sch.Close()
	s := sch.NewStream("s", 0, 0)
	var inUse, overlaps, holds atomic.Int32
	use := func() {
		if !inUse.CompareAndSwap(0, 1) {
			overlaps.Add(1)
			return
		}
		time.Sleep(time.Microsecond) // in use a moment: an overlap can show
		inUse.Store(0)
	}
	stop := make(chan struct{})
	holder := make(chan struct{})
	go func() {
		defer close(holder)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s.TryHold() {
				holds.Add(1)
				use()
				s.Release()
			}
			runtime.Gosched() // two cores: let the submitter run
		}
	}()
	var works []*Work
	for i := range 600 {
		w := s.Submit("op", func() error { use(); return nil })
		switch i % 3 {
		case 0:
			w.RunInline()
		case 1: // leave the stream idle now and then, for the holder
			require.NoError(t, w.Wait(context.Background(), waitLimit))
			if i%30 == 1 { // and make sure it gets it at times
				before := holds.Load()
				require.Eventually(t, func() bool { return holds.Load() > before }, waitLimit, 10*time.Microsecond)
			}
		}
		works = append(works, w)
	}
	waitAll(t, works...)
	close(stop)
	<-holder
	require.Zero(t, overlaps.Load(), "a held op and a queued op ran at the same time")
	require.NotZero(t, holds.Load(), "the holder never got the stream")
}
