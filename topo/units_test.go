package topo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"1GiB", 1 << 30, ""},
		{"1 GiB", 1 << 30, ""},
		{"64KiB", 64 << 10, ""},
		{"1.5MiB", 3 << 19, ""},
		{"1GB", 1e9, ""},
		{"4kB", 4000, ""},
		{"4M", 4 << 20, ""},
		{"8", 8, ""},
		{"8B", 8, ""},
		{"1e3B", 1000, ""},
		{"", 0, "number"},
		{"GiB", 0, "number"},
		{"1Gbit", 0, "not a byte unit"},
		{"1Gb", 0, "not a byte unit"},
		{"1XB", 0, "unknown unit"},
		{"0.5B", 0, "whole"},
		{"-1KiB", 0, "non-negative"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBytes(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  string
	}{
		{"200Gbit", 25e9, ""},
		{"200Gbit/s", 25e9, ""},
		{"200Gbps", 25e9, ""},
		{"200Gb", 25e9, ""},
		{"100mbit", 12.5e6, ""},
		{"100GB", 100e9, ""},
		{"100GB/s", 100e9, ""},
		{"100GBps", 100e9, ""},
		{"1GiB/s", 1 << 30, ""},
		{"1e9", 1e9, ""},
		{"8bit", 1, ""},
		{"0GB", 0, "positive"},
		{"10furlongs", 0, "unknown unit"},
		{"10Xbit", 0, "unknown unit"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBandwidth(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.InEpsilon(t, tc.want, got, 1e-12)
		})
	}
}

func TestParseLatency(t *testing.T) {
	d, err := ParseLatency("5us")
	require.NoError(t, err)
	assert.Equal(t, 5*time.Microsecond, d)
	d, err = ParseLatency("0")
	require.NoError(t, err)
	assert.Zero(t, d)
	_, err = ParseLatency("5")
	assert.ErrorContains(t, err, "missing unit")
	_, err = ParseLatency("-1us")
	assert.ErrorContains(t, err, "negative")
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "1 GiB", FormatBytes(1<<30))
	assert.Equal(t, "1.5 MiB", FormatBytes(3<<19))
	assert.Equal(t, "8 B", FormatBytes(8))
	assert.Equal(t, "12.5 GB/s", FormatBandwidth(12.5e9))
	assert.Equal(t, "110.3 ms", FormatDuration(110300*time.Microsecond))
	assert.Equal(t, "12.5 µs", FormatDuration(12500*time.Nanosecond))
	assert.Equal(t, "2.5 s", FormatDuration(2500*time.Millisecond))
	assert.Equal(t, "29030 s", FormatDuration(29030*time.Second))
}
