package topo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFit(t *testing.T) {
	line := func(alpha time.Duration, bw float64, noise ...float64) []Sample {
		var s []Sample
		for i, n := range []int{8, 64 << 10, 1 << 20, 4 << 20} {
			sec := alpha.Seconds() + float64(n)/bw
			if i < len(noise) {
				sec *= 1 + noise[i]
			}
			s = append(s, Sample{Bytes: n, Time: time.Duration(sec * 1e9)})
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		samples []Sample
		alpha   time.Duration
		bw      float64
		err     string
	}{
		{"exact", line(10*time.Microsecond, 1e9), 10 * time.Microsecond, 1e9, ""},
		{"noisy", line(50*time.Microsecond, 125e6, 0.05, -0.02, 0.03, -0.01), 0, 125e6, ""},
		{"one sample", line(0, 1e9)[:1], 0, 0, "at least 2"},
		{"one size", []Sample{{100, time.Millisecond}, {100, 2 * time.Millisecond}}, 0, 0, "same size"},
		{"shrinking", []Sample{{100, 2 * time.Millisecond}, {200, time.Millisecond}}, 0, 0, "does not grow"},
		{"negative", []Sample{{-1, time.Millisecond}, {200, time.Millisecond}}, 0, 0, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := FitLink(tc.samples)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.InEpsilon(t, tc.bw, l.Bandwidth, 0.05)
			if tc.alpha > 0 {
				assert.InDelta(t, tc.alpha.Seconds(), l.Latency.Seconds(), 1e-7)
			}
			assert.GreaterOrEqual(t, l.Latency, time.Duration(0))
		})
	}
}
