package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSysmonNice(t *testing.T) {
	cases := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", defaultSysmonNice, false},
		{"0", 0, false},
		{" 10 ", 10, false},
		{"19", 19, false},
		{"20", 0, true},
		{"-1", 0, true},
		{"low", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := sysmonNice(c.in)
			if c.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), sysmonNiceVar)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestPickMonitor(t *testing.T) {
	cases := []struct {
		name string
		seen map[int]int
		want int
	}{
		{"nothing seen", map[int]int{}, 0},
		{"too few hits", map[int]int{7: monitorHits - 1}, 0},
		{"one thread", map[int]int{7: monitorHits}, 7},
		{"a stray hit beside it", map[int]int{7: monitorHits + 2, 9: 1}, 7},
		{"stray hit first", map[int]int{9: 1, 7: monitorHits}, 7},
		{"two candidates", map[int]int{7: monitorHits, 9: 2}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, pickMonitor(c.seen))
		})
	}
}
