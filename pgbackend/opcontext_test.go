package pgbackend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

func TestOpContext(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"live: no error, deadline reported", func(t *testing.T) {
			o := newOpContext(context.Background(), time.Hour)
			defer o.release()
			assert.NoError(t, o.Err())
			dl, ok := o.Deadline()
			assert.True(t, ok)
			assert.WithinDuration(t, time.Now().Add(time.Hour), dl, time.Minute)
			assert.Nil(t, o.inner.Load(), "Err must not make a timer")
		}},
		{"deadline passes before anyone asked for Done", func(t *testing.T) {
			o := newOpContext(context.Background(), time.Millisecond)
			defer o.release()
			time.Sleep(3 * time.Millisecond) // wait out the 1 ms deadline
			assert.ErrorIs(t, o.Err(), context.DeadlineExceeded)
			<-o.Done() // already closed once made
			assert.ErrorIs(t, o.Err(), context.DeadlineExceeded)
		}},
		{"Done closes at the deadline", func(t *testing.T) {
			o := newOpContext(context.Background(), 5*time.Millisecond)
			defer o.release()
			select {
			case <-o.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done did not close")
			}
			assert.ErrorIs(t, o.Err(), context.DeadlineExceeded)
			assert.ErrorIs(t, context.Cause(o), context.DeadlineExceeded)
		}},
		{"parent cancellation, with its cause", func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.Background())
			o := newOpContext(parent, time.Hour)
			defer o.release()
			cause := errors.New("rank 3 died")
			cancel(cause)
			assert.ErrorIs(t, o.Err(), context.Canceled)
			<-o.Done()
			assert.ErrorIs(t, context.Cause(o), cause)
		}},
		{"values of the parent", func(t *testing.T) {
			o := newOpContext(context.WithValue(context.Background(), ctxKey{}, "v"), time.Hour)
			defer o.release()
			assert.Equal(t, "v", o.Value(ctxKey{}))
		}},
		{"AfterFunc fires on the deadline", func(t *testing.T) {
			o := newOpContext(context.Background(), 5*time.Millisecond)
			defer o.release()
			fired := make(chan struct{})
			context.AfterFunc(o, func() { close(fired) })
			select {
			case <-fired:
			case <-time.After(5 * time.Second):
				t.Fatal("AfterFunc did not fire")
			}
		}},
		{"release ends a made context, and one made after", func(t *testing.T) {
			o := newOpContext(context.Background(), time.Hour)
			done := o.Done()
			o.release()
			<-done
			assert.ErrorIs(t, o.Err(), context.Canceled)
			o2 := newOpContext(context.Background(), time.Hour)
			o2.release()
			<-o2.Done()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

func TestOpContextConcurrentDone(t *testing.T) {
	o := newOpContext(context.Background(), time.Hour)
	defer o.release()
	chans := make(chan (<-chan struct{}), 8)
	for range 8 {
		go func() { chans <- o.Done() }()
	}
	first := <-chans
	for range 7 {
		require.Equal(t, first, <-chans, "every caller sees one Done channel")
	}
}
