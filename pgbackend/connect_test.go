package pgbackend

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// connectAll builds one communicator per rank through Connect, as the C ABI
// does, with the given host of each rank.
func connectAll(t *testing.T, hosts []string, cfg Config) []*Communicator {
	t.Helper()
	n := len(hosts)
	ls := make([]*tcp.Listener, n)
	addrs := make([]string, n)
	for i := range ls {
		l, err := tcp.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i] = l, l.Addr()
	}
	secret := []byte(fmt.Sprintf("secret-%s", t.Name()))
	cs := make([]*Communicator, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[r], errs[r] = Connect(context.Background(), ls[r], Rendezvous{Rank: r, Addrs: addrs, HostIDs: hosts, Secret: secret}, cfg)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			_ = c.Destroy()
		}
	})
	return cs
}

// Every route a communicator can take (TCP only, shared memory messages,
// shared-memory collectives, and a mix of hosts) gives the same results.
func TestConnectRoutes(t *testing.T) {
	tcpOnly := testConfig()
	tcpOnly.Transport = "tcp"
	noArena := testConfig()
	noArena.ShmCollectives = false
	lazy := testConfig()
	lazy.LazyLinks = "1"

	tests := []struct {
		name  string
		hosts []string
		cfg   Config
		want  string // transport to rank 1 as seen by rank 0
	}{
		{"one host, shared-memory collectives", []string{"h", "h", "h"}, testConfig(), "shm+arena"},
		{"one host, shm messages", []string{"h", "h", "h"}, noArena, "shm"},
		{"one host, tcp forced", []string{"h", "h", "h"}, tcpOnly, "tcp"},
		{"two hosts", []string{"a", "b", "a"}, testConfig(), "tcp"},
		{"three hosts, lazy links", []string{"a", "b", "c", "a", "b", "c"}, lazy, "tcp"},
		{"one rank per host, lazy links", []string{"a", "b", "c", "d"}, lazy, "tcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := connectAll(t, tc.hosts, tc.cfg)
			assert.Equal(t, tc.want, cs[0].Info().Transports[1])
			n := len(cs)
			eachRank(cs, func(c *Communicator) {
				r := float32(c.Rank())
				// all_reduce, in place, small and large.
				small := f32(r, 1)
				w, err := c.AllReduce(small, small, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, f32(float32(n*(n-1)/2), float32(n)), small)

				big := make([]float32, 1<<20+3)
				for i := range big {
					big[i] = r + float32(i%7)
				}
				bb := f32(big...)
				w, err = c.AllReduce(bb, bb, reduce.Float32, reduce.Max, 0, StreamHighPriority)
				wait(t, w, err)
				for i := 0; i < len(big); i += 4099 {
					assert.Equal(t, f32(float32(n-1)+float32(i%7)), bb[4*i:4*i+4])
				}

				// all_gather, broadcast, reduce_scatter, all_to_all, barrier.
				all := make([]byte, 4*n)
				w, err = c.AllGather(f32(r), all, StreamDefault)
				wait(t, w, err)
				expect := make([]float32, n)
				for i := range expect {
					expect[i] = float32(i)
				}
				assert.Equal(t, f32(expect...), all)

				bc := f32(r, r)
				w, err = c.Broadcast(bc, bc, n-1, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, f32(float32(n-1), float32(n-1)), bc)

				rs := make([]byte, 4)
				w, err = c.ReduceScatter(f32(expect...), rs, reduce.Float32, reduce.Sum, 0, StreamDefault)
				wait(t, w, err)
				assert.Equal(t, f32(float32(n)*r), rs)

				sendA := make([]float32, n)
				for i := range sendA {
					sendA[i] = 10*r + float32(i)
				}
				recvA := make([]byte, 4*n)
				counts, displs := make([]int, n), make([]int, n)
				for i := range counts {
					counts[i], displs[i] = 4, 4*i
				}
				w, err = c.AllToAllV(f32(sendA...), counts, displs, recvA, counts, displs, StreamDefault)
				wait(t, w, err)
				for i := 0; i < n; i++ {
					assert.Equal(t, f32(10*float32(i)+r), recvA[4*i:4*i+4])
				}

				w, err = c.Barrier(StreamDefault)
				wait(t, w, err)
			})
		})
	}
}

// With lazy links a rank links only with the peers its ops use: after
// init and an all_reduce it holds fewer TCP links than ranks on other
// hosts, and an all_to_all, which exchanges with every rank, links them all.
func TestLazyLinksFollowTheAlgorithms(t *testing.T) {
	cfg := testConfig()
	cfg.LazyLinks = "1"
	hosts := []string{"a", "b", "c", "d", "e", "f", "a", "b", "c", "d", "e", "f"}
	cs := connectAll(t, hosts, cfg)
	n := len(cs)
	links := func(c *Communicator) int { return c.lazy.(*tcp.Endpoint).Links() }
	eachRank(cs, func(c *Communicator) {
		v := f32(float32(c.Rank()))
		w, err := c.AllReduce(v, v, reduce.Float32, reduce.Sum, 0, StreamDefault)
		wait(t, w, err)
		assert.Equal(t, f32(float32(n*(n-1)/2)), v)
	})
	remote := n - 2
	for r, c := range cs {
		t.Logf("rank %d: %d TCP links after init and an all_reduce", r, links(c))
		assert.Less(t, links(c), remote, "rank %d links with fewer than the %d ranks of other hosts", r, remote)
	}
	eachRank(cs, func(c *Communicator) {
		send := make([]float32, n)
		for i := range send {
			send[i] = float32(100*c.Rank() + i)
		}
		recv := make([]byte, 4*n)
		counts, displs := make([]int, n), make([]int, n)
		for i := range counts {
			counts[i], displs[i] = 4, 4*i
		}
		w, err := c.AllToAllV(f32(send...), counts, displs, recv, counts, displs, StreamDefault)
		wait(t, w, err)
		for i := range n {
			assert.Equal(t, f32(float32(100*i+c.Rank())), recv[4*i:4*i+4])
		}
	})
	for r, c := range cs {
		assert.Equal(t, remote, links(c), "rank %d after all_to_all", r)
	}
}
