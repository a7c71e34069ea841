package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stampOp is an Op that keeps the stamps it was run with.
type stampOp struct {
	end    time.Duration // > 0: sets its own end, this long after its start
	err    error
	stamps Stamps // as Run saw them
}

func (o *stampOp) Run(stamps *Stamps) error {
	if o.end > 0 {
		stamps.Ended = stamps.Started.Add(o.end)
	}
	o.stamps = *stamps
	return o.err
}

func (o *stampOp) Desc() string { return "stamp op" }

func TestSubmitOpShareStamps(t *testing.T) {
	sch := NewScheduler("t", Config{})
	defer sch.Close()
	st := sch.NewStream("s", 0, 0)
	boom := errors.New("boom")
	cases := []struct {
		name   string
		issued bool // the caller passes its own reading
		end    time.Duration
		err    error
		inline bool
	}{
		{"inline, scheduler's readings", false, 0, nil, true},
		{"inline, the caller's issue time and the op's end", true, time.Hour, nil, true},
		{"on a worker, failing", false, 0, boom, false},
		{"on a worker, the op's end", true, time.Hour, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var issued time.Time
			if tc.issued {
				issued = sch.Clock().Now()
			}
			op := &stampOp{end: tc.end, err: tc.err}
			r, err := st.Reserve(context.Background())
			require.NoError(t, err)
			w := r.SubmitOp(op, issued)
			assert.Equal(t, "stamp op", w.Desc())
			if tc.inline {
				require.True(t, w.RunInline())
			} else {
				w.Start()
			}
			require.ErrorIs(t, w.Wait(context.Background(), waitLimit), tc.err)
			if tc.issued {
				assert.Equal(t, issued, op.stamps.Issued)
			}
			assert.False(t, op.stamps.Started.Before(op.stamps.Issued), "started before issued")
			started, finished := w.Times()
			assert.Equal(t, op.stamps.Started, started)
			if tc.end > 0 {
				assert.Equal(t, started.Add(tc.end), finished, "the op's own end")
			} else {
				assert.False(t, finished.Before(started), "finished before started")
			}
		})
	}
}

func TestSubmitOpReusedReservation(t *testing.T) {
	st := New("s", 0)
	defer st.Close()
	r, err := st.Reserve(context.Background())
	require.NoError(t, err)
	require.NoError(t, r.SubmitOp(&stampOp{}, time.Time{}).Wait(context.Background(), waitLimit))
	err = r.SubmitOp(&stampOp{}, time.Time{}).Wait(context.Background(), waitLimit)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stamp op on stream s: reservation already used")
}

func TestClockReadsLikeTimeNow(t *testing.T) {
	c := NewClock()
	for range 3 {
		before := time.Now()
		got := c.Now()
		after := time.Now()
		// Monotonic order, and a wall reading within the same moment.
		assert.False(t, got.Before(before) || got.After(after), "%v not in [%v, %v]", got, before, after)
		assert.InDelta(t, before.UnixNano(), got.UnixNano(), float64(time.Second))
		time.Sleep(time.Millisecond) // the next readings at a later moment
	}
	assert.True(t, Clock{}.IsZero())
	assert.False(t, c.IsZero())
}
