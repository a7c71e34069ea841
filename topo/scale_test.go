package topo

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScaleModelCounts(t *testing.T) {
	c := DefaultScaleCosts
	for _, tc := range []struct {
		hosts, k, streamsPerPeer, streams int
		arenas                            bool
		sockets, fds                      int
	}{
		// S·(N-k) sockets; fds = base + sockets + pidfd per local peer +
		// per stream an arena fd per local rank (own included): the
		// measured 56, 88, 152, 200, 392, 40, 104 of docs/scale.md.
		{4, 8, 1, 2, true, 24, 9 + 24 + 7 + 2*8},
		{8, 8, 1, 2, true, 56, 88},
		{16, 8, 1, 2, true, 120, 152},
		{1, 64, 1, 2, true, 0, 200},
		{1, 128, 1, 2, true, 0, 392},
		{32, 1, 1, 2, true, 31, 40},
		{1, 32, 1, 2, true, 0, 104},
		{2048, 8, 1, 2, true, 16376, 9 + 16376 + 7 + 16},
		{2048, 8, 4, 2, true, 4 * 16376, 9 + 4*16376 + 7 + 16},
		{1024, 16, 1, 4, true, 16368, 9 + 16368 + 15 + 4*16},
		{128, 8, 1, 2, false, 1016, 9 + 1016 + 7},
		{16384, 1, 1, 2, true, 16383, 9 + 16383},
	} {
		t.Run(fmt.Sprintf("%dx%d/S%d/T%d/arenas=%v", tc.hosts, tc.k, tc.streamsPerPeer, tc.streams, tc.arenas), func(t *testing.T) {
			cfg := DefaultScaleConfig(tc.hosts, tc.k)
			cfg.StreamsPerPeer, cfg.Streams, cfg.Arenas, cfg.LazyLinks = tc.streamsPerPeer, tc.streams, tc.arenas, "0"
			r, err := ScaleModel(cfg)
			require.NoError(t, err)
			n := tc.hosts * tc.k
			assert.Equal(t, tc.sockets, r.Sockets)
			assert.Equal(t, tc.streamsPerPeer*(n-tc.k), r.Sockets)
			assert.Equal(t, tc.fds, r.FDs)
			assert.False(t, r.Lazy)
			assert.Equal(t, r.Sockets, r.Links)
			assert.Equal(t, int64(n)*int64(r.Sockets)/2, r.JobConnections)
			assert.Equal(t, tc.k*r.Sockets, r.HostSockets)
			// Private memory: fixed, across hosts, per link, per local peer.
			want := c.BaseBytes + int64(r.Sockets)*c.ConnBytes + int64(tc.k-1)*c.LocalPeerBytes
			if tc.hosts > 1 {
				want += c.MultiHostBytes
			}
			assert.Equal(t, want, r.PrivateInit)
			assert.Equal(t, want+int64(r.Sockets)*(c.ConnActiveBytes-c.ConnBytes), r.PrivateActive)
			assert.Empty(t, r.Fanout)
			assert.Equal(t, int64(r.Sockets)*c.KernelSocketBytes, r.KernelBytes)
			// /dev/shm: a message segment and an arena per stream, k > 1.
			shm := int64(0)
			if tc.k > 1 {
				shm = ShmSegmentBytes(tc.k)
				if tc.arenas {
					shm += int64(tc.streams) * ArenaSegmentBytes()
				}
			}
			assert.Equal(t, shm, r.ShmBytes)
			assert.Equal(t, int64(tc.k)*shm, r.HostShmBytes)
		})
	}
}

// Segments: 64 slots of 64 KiB per ring up to 8 ranks a host, then the
// rings share 32 MiB, down to 4 slots (1 MiB... about 33 MB at 128 ranks).
func TestShmSegmentBytes(t *testing.T) {
	for _, tc := range []struct {
		k, slots int
		bytes    int64
	}{
		{1, 64, 0},
		{2, 64, 4096 + (128 + 64*65600)},
		{8, 64, 4096 + 7*(128+64*65600)},
		{9, 63, 4096 + 8*(128+63*65600)},
		{64, 8, 4096 + 63*(128+8*65600)},
		{128, 4, 4096 + 127*(128+4*65600)},
		{1024, 4, 4096 + 1023*(128+4*65600)},
	} {
		assert.Equal(t, tc.slots, ShmSlots(tc.k), tc.k)
		assert.Equal(t, roundUp64(tc.bytes, 4096), ShmSegmentBytes(tc.k), tc.k)
	}
	// Two 4 MiB data halves after a header page and two inline slots.
	assert.Equal(t, int64(16384+8<<20), ArenaSegmentBytes())
}

// Memory and init grow with the sockets, S·(N-k): linearly in N at fixed k,
// and the links dominate a rank's memory from a few thousand ranks on.
func TestScaleModelGrowth(t *testing.T) {
	var last ScaleResult
	for _, hosts := range []int{128, 256, 512, 1024, 2048} {
		cfg := DefaultScaleConfig(hosts, 8)
		cfg.LazyLinks = "0"
		r, err := ScaleModel(cfg)
		require.NoError(t, err)
		if last.Ranks > 0 {
			assert.Equal(t, 2*last.Sockets+8, r.Sockets) // 2N-8 = 2(N-8)+8
			assert.InEpsilon(t, float64(last.Sockets)*2, float64(r.Sockets), 0.01)
			assert.Greater(t, r.PrivateInit, last.PrivateInit)
			assert.Equal(t, int64(r.Sockets-last.Sockets)*DefaultScaleCosts.ConnBytes, r.PrivateInit-last.PrivateInit)
			assert.Greater(t, r.Init, last.Init)
		}
		assert.Equal(t, last.ShmBytes == 0 || last.ShmBytes == r.ShmBytes, true, "shm does not grow with N")
		last = r
	}
	assert.Equal(t, "TCP links' read buffers and state", last.MemoryDominant)
	assert.Equal(t, "CPU: TCP connections", last.InitDominant)
	assert.Contains(t, strings.Join(last.Warnings, "\n"), "somaxconn")
	// One host: no socket, shared memory dominates.
	r, err := ScaleModel(DefaultScaleConfig(1, 8))
	require.NoError(t, err)
	assert.Equal(t, 0, r.Sockets)
	assert.Equal(t, "shared-memory segments (/dev/shm)", r.MemoryDominant)
	assert.NotContains(t, r.Table(), "handshake")
}

// Init: the rank's CPU and a handshake (or rank 0's accepting, whichever
// is longer), then discovery's N-1 steps, then the store.
func TestScaleModelInit(t *testing.T) {
	cfg := DefaultScaleConfig(2048, 8)
	cfg.StoreRate, cfg.StoreRTT, cfg.LazyLinks = 100e3, 100*time.Microsecond, "0"
	r, err := ScaleModel(cfg)
	require.NoError(t, err)
	n := 16384
	c := DefaultScaleCosts
	cpu := c.InitCPU + c.MultiHostCPU + time.Duration(n-8)*c.ConnCPU + 7*c.LocalPeerCPU
	assert.InDelta(t, cpu.Seconds(), r.RankInitCPU, 1e-9)
	ring := time.Duration(n-1)*c.HopSoftware + time.Duration(n-2048)*cfg.IntraLatency + 2048*cfg.InterLatency
	store := time.Duration(float64(2*n*n+4*n) / cfg.StoreRate * 1e9)
	assert.Equal(t, int64(2*n*n+4*n), r.StoreRequests)
	assert.InDelta(t, (cpu + 4*cfg.InterLatency + ring + store).Seconds(), r.Init.Seconds(), 1e-6)
	assert.Contains(t, r.InitDominant, "rendezvous store")
	out, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"init_terms"`)
}

func TestScaleArgs(t *testing.T) {
	cfg, err := ParseScaleArgs(strings.Fields("--hosts 1024 --ranks-per-host 16 --streams-per-peer 2 --inter-lat 10us --store-rate 2e5"))
	require.NoError(t, err)
	assert.Equal(t, 1024, cfg.Hosts)
	assert.Equal(t, 16, cfg.RanksPerHost)
	assert.Equal(t, 2, cfg.StreamsPerPeer)
	assert.Equal(t, 10*time.Microsecond, cfg.InterLatency)
	assert.InDelta(t, 2e5, cfg.StoreRate, 0)
	for _, tc := range []struct{ args, err string }{
		{"--hosts 0", "at least 1"},
		{"--hosts 1 --ranks-per-host 1", "at least 2 ranks"},
		{"--inter-lat fast", "--inter-lat"},
		{"--store-rate -1", "--store-rate"},
		{"--conn-bytes 1Gbit", "--conn-bytes"},
		{"extra", "unexpected argument"},
	} {
		_, err := ParseScaleArgs(strings.Fields(tc.args))
		assert.ErrorContains(t, err, tc.err, tc.args)
	}
	out, err := ScaleJSON(`{"hosts": 2048, "ranks_per_host": 8, "lazy_links": "0"}`)
	require.NoError(t, err)
	var res struct {
		ScaleResult
		Table string `json:"table"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, 16384, res.Ranks)
	assert.Equal(t, 16376, res.Sockets)
	assert.Contains(t, res.Table, "init dominated by")
	_, err = ScaleJSON(`{"hosts": [1]}`)
	assert.ErrorContains(t, err, "want a string or a number")
	assert.Contains(t, ScaleUsage(), "-ranks-per-host")
}

// Lazy links (HCCL_GO_LAZY_LINKS): auto above 64 ranks on other hosts; after
// init the worst rank holds its ring neighbour across hosts (2 on hosts of
// one rank) and the listener, the measured 1-2 sockets and 33-34 fds of 128
// ranks on 16 hosts; the ops add their partners.
func TestScaleModelLazy(t *testing.T) {
	for _, tc := range []struct {
		hosts, k int
		setting  string
		lazy     bool
		sockets  int
	}{
		{8, 8, "auto", false, 56},
		{9, 8, "auto", false, 64},
		{10, 8, "auto", true, 2},
		{16, 8, "auto", true, 2},
		{16, 8, "0", false, 120},
		{4, 8, "1", true, 2},
		{128, 1, "auto", true, 3},
		{1, 128, "1", false, 0},
		{2048, 8, "auto", true, 2},
	} {
		t.Run(fmt.Sprintf("%dx%d/%s", tc.hosts, tc.k, tc.setting), func(t *testing.T) {
			cfg := DefaultScaleConfig(tc.hosts, tc.k)
			cfg.LazyLinks = tc.setting
			r, err := ScaleModel(cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.lazy, r.Lazy)
			assert.Equal(t, tc.sockets, r.Sockets)
			if !tc.lazy {
				assert.Empty(t, r.Fanout)
				return
			}
			n := tc.hosts * tc.k
			assert.Equal(t, r.Sockets-1, r.Links)
			assert.Equal(t, DefaultScaleCosts.BaseFDs+r.Sockets+cfg.LocalFDs(), r.FDs)
			require.Len(t, r.Fanout, 4)
			assert.Equal(t, 2, r.Fanout[0].Peers)
			assert.Equal(t, tc.hosts-1, r.Fanout[2].Peers)
			assert.Equal(t, n-tc.k, r.Fanout[3].Peers)
			all := r.Fanout[3]
			assert.Equal(t, n-tc.k+1, all.Sockets)
			assert.Equal(t, r.PrivateActive, all.Private, "every peer linked and used")
			assert.Equal(t, time.Duration(n-tc.k)*DefaultScaleCosts.ConnCPU+4*cfg.InterLatency, all.FirstUse)
			if n >= 4096 {
				assert.Contains(t, r.InitDominant, "discovery")
			}
		})
	}
	m, err := ScaleModel(DefaultScaleConfig(16, 8))
	require.NoError(t, err)
	assert.Equal(t, 34, m.FDs)
	_, err = ParseScaleArgs([]string{"--lazy-links", "maybe"})
	assert.ErrorContains(t, err, "none of 0, 1, auto")
}
