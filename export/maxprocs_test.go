package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExplicitMaxProcs(t *testing.T) {
	cases := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", -1, false},
		{"auto", -1, false},
		{" AUTO ", -1, false},
		{"0", 0, false},
		{"1", 1, false},
		{"8", 8, false},
		{"-1", 0, true},
		{"two", 0, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := explicitMaxProcs(c.in)
			if c.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), maxProcsVar)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestAutoMaxProcs(t *testing.T) {
	cases := []struct {
		name              string
		hosts             []string
		rank, cpus, cores int
	}{
		{"2 ranks on 2 cores", []string{"a", "a"}, 1, 2, 1},
		{"4 ranks on 2 cores", []string{"a", "a", "a", "a"}, 0, 2, 1},
		{"2 of 4 ranks here, 16 cores", []string{"a", "b", "a", "b"}, 2, 16, 8},
		{"3 ranks on 8 cores", []string{"a", "a", "a"}, 0, 8, 2},
		{"8 ranks on 64 cores", []string{"a", "a", "a", "a", "a", "a", "a", "a"}, 5, 64, 8},
		{"one rank per host", []string{"a", "b"}, 0, 4, 4},
		{"locality unknown", nil, 0, 4, 4},
		{"empty host id", []string{"", ""}, 0, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.cores, autoMaxProcs(c.cpus, localRanks(c.hosts, c.rank)))
		})
	}
}

func TestWantMaxProcs(t *testing.T) {
	cases := []struct {
		name                 string
		cores, threads, want int
	}{
		{"one calling thread, 1 core per rank: the floor", 1, 1, 2},
		{"loop and completion thread: one P to spare", 1, 2, 3},
		{"a third calling thread", 1, 3, 4},
		{"cores per rank above the threads", 8, 2, 8},
		{"bounded", 1, 100, maxAutoMaxProcs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, wantMaxProcs(c.cores, c.threads))
		})
	}
}
