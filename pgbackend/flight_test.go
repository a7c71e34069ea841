package pgbackend

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
)

func TestFlightRecorderRing(t *testing.T) {
	tests := []struct {
		name       string
		size, ops  int
		wantFirst  uint64
		wantLen    int
		wantStream uint64 // last ended seq on the default stream
	}{
		{"partly filled", 8, 5, 1, 5, 5},
		{"wrapped", 8, 20, 13, 8, 20},
		{"disabled", 0, 5, 0, 0, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newFlightRecorder(tc.size, streams.NewClock())
			for i := 1; i <= tc.ops; i++ {
				op := reduction("allreduce", 4*i, reduce.Float32, reduce.Sum, -1)
				op.Seq, op.Stream = uint64(i), StreamDefault
				id := r.add(op, time.Now())
				r.start(id, op, time.Now())
				var err error
				if i%3 == 0 {
					err = errors.New("boom")
				}
				r.end(id, op, err, time.Now())
			}
			got, total := r.snapshot()
			assert.EqualValues(t, tc.ops, total)
			require.Len(t, got, tc.wantLen)
			if tc.wantLen > 0 {
				assert.Equal(t, tc.wantFirst, got[0].id)
				for i := 1; i < len(got); i++ {
					assert.Equal(t, got[i-1].id+1, got[i].id, "oldest first, no gaps")
				}
				for _, e := range got {
					want := stateDone
					if e.id%3 == 0 {
						want = stateFailed
					}
					assert.Equal(t, want, e.state, "op %d", e.id)
				}
			}
			assert.Equal(t, tc.wantStream, r.streams()[StreamDefault].ended)
		})
	}
}

func TestDumpTrace(t *testing.T) {
	cfg := reliabilityConfig(t, 5*time.Second)
	cs := newComms(t, 2, cfg)
	eachRank(cs, func(c *Communicator) {
		buf := f32(1, 2)
		w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
		wait(t, w, err)
	})
	path, err := cs[1].DumpTrace("", "requested")
	require.NoError(t, err)
	assert.Equal(t, cfg.TraceDir, filepath.Dir(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var dump struct {
		Rank   int    `json:"rank"`
		Reason string `json:"reason"`
		Issued uint64 `json:"issued_seq"`
		Ops    []struct {
			Op    string `json:"op"`
			Seq   uint64 `json:"seq"`
			State string `json:"state"`
			Route string `json:"route"`
			DType string `json:"dtype"`
		} `json:"ops"`
	}
	require.NoError(t, json.Unmarshal(b, &dump))
	assert.Equal(t, 1, dump.Rank)
	assert.Equal(t, "requested", dump.Reason)
	assert.EqualValues(t, 1, dump.Issued)
	require.Len(t, dump.Ops, 1)
	assert.Equal(t, "allreduce", dump.Ops[0].Op)
	assert.Equal(t, "done", dump.Ops[0].State)
	assert.Equal(t, "messages", dump.Ops[0].Route)
	assert.Equal(t, "float32", dump.Ops[0].DType)
}

func TestCheckSetting(t *testing.T) {
	tests := []struct {
		value, torchDebug string
		want              bool
	}{
		{"auto", "", false},
		{"auto", "DETAIL", true},
		{"auto", "detail", true},
		{"auto", "INFO", false},
		{"0", "DETAIL", false},
		{"1", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.value+"/"+tc.torchDebug, func(t *testing.T) {
			t.Setenv("TORCH_DISTRIBUTED_DEBUG", tc.torchDebug)
			var c Config
			require.NoError(t, setCheck(&c, tc.value))
			assert.Equal(t, tc.want, c.Check)
		})
	}
}

// The ring keeps ops in words (C writes them too): every field of an op
// must come back as it went in.
func TestFlightRecorderKeepsEveryField(t *testing.T) {
	clock := streams.NewClock()
	r := newFlightRecorder(4, clock)
	coll := reduction("reduce", 4096, reduce.BFloat16, reduce.PreMulSum, 1).withCounts([]int{3, 4})
	coll.Seq, coll.Stream, coll.Route, coll.Algo = 7, StreamHighPriority, "messages", "ring"
	p2p := p2pOp("recv", 16, 1, 1<<31+5)
	ops := []opDesc{coll, p2p}
	t0 := clock.Now()
	var ids []uint64
	for i, op := range ops {
		id := r.add(op, t0.Add(time.Duration(i)))
		r.start(id, op, t0.Add(time.Second))
		r.end(id, op, []error{nil, errors.New("peer gone")}[i], t0.Add(2*time.Second))
		ids = append(ids, id)
	}
	got, total := r.snapshot()
	require.EqualValues(t, 2, total)
	require.Len(t, got, 2)
	for i, e := range got {
		assert.Equal(t, ids[i], e.id)
		assert.Equal(t, ops[i], e.op)
		assert.True(t, e.enqueued.Equal(t0.Add(time.Duration(i))), "enqueued %v", e.enqueued)
		assert.True(t, e.started.Equal(t0.Add(time.Second)))
		assert.True(t, e.ended.Equal(t0.Add(2*time.Second)))
	}
	assert.Equal(t, stateDone, got[0].state)
	assert.Empty(t, got[0].err)
	assert.Equal(t, stateFailed, got[1].state)
	assert.Equal(t, "peer gone", got[1].err)
	p := r.streams()[StreamHighPriority]
	assert.EqualValues(t, 7, p.started)
	assert.EqualValues(t, 7, p.ended)
	assert.True(t, p.since.IsZero())
}
