package intra

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// byteSizes are the payload sizes of the data-movement tests at p ranks:
// empty, tiny, inline, one or several halves, and more than the data area.
func byteSizes(p int, cfg arena.Config) []int {
	return []int{0, 1, 7, p + 1, cfg.InlineBytes, cfg.InlineBytes + 1, 1000, cfg.DataBytes/2 + 5, cfg.DataBytes + 3}
}

// pattern is recognisable data for rank r.
func pattern(n, r, salt int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + r*31 + salt)
	}
	return b
}

func TestBroadcast(t *testing.T) {
	for _, p := range worlds {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, n := range byteSizes(p, cfg) {
				for _, root := range []int{0, p - 1} {
					for _, inPlace := range []bool{false, true} {
						want := pattern(n, root, n)
						outs := make([][]byte, p)
						w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
							recv := make([]byte, n)
							var send []byte
							if r == root {
								send = append([]byte(nil), want...)
								if inPlace {
									recv = send
								}
							}
							outs[r] = recv
							if err := checkBroadcast(a, send, recv, root); err != nil {
								return err
							}
							return broadcast(ctx, a, seq, send, recv, root, testTuning())
						})
						for r := range p {
							requireSameBytes(t, want, outs[r], "p=%d n=%d root=%d rank %d", p, n, root, r)
						}
					}
				}
			}
		})
	}
}

func TestAllGather(t *testing.T) {
	for _, p := range worlds {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, m := range byteSizes(p, cfg) {
				for _, inPlace := range []bool{false, true} {
					var want []byte
					for r := range p {
						want = append(want, pattern(m, r, m)...)
					}
					outs := make([][]byte, p)
					w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
						recv := make([]byte, p*m)
						send := pattern(m, r, m)
						if inPlace {
							copy(recv[r*m:], send)
							send = recv[r*m : (r+1)*m]
						}
						outs[r] = recv
						if err := checkAllGather(a, send, recv); err != nil {
							return err
						}
						return allGather(ctx, a, seq, send, recv, testTuning())
					})
					for r := range p {
						requireSameBytes(t, want, outs[r], "p=%d m=%d inPlace=%v rank %d", p, m, inPlace, r)
					}
				}
			}
		})
	}
}

// a2aCount is the number of bytes rank i sends rank j in a test case with
// blocks of up to max bytes; some are empty.
func a2aCount(i, j, max int) int {
	if max == 0 || (i+2*j)%5 == 3 {
		return 0
	}
	return (i*7919 + j*104729 + max/3) % (max + 1)
}

func TestAllToAllV(t *testing.T) {
	for _, p := range worlds {
		t.Run(fmt.Sprint("p", p), func(t *testing.T) {
			cfg := testArenaConfig("")
			w := newWorld(t, p, cfg)
			for _, maxBlock := range []int{0, 1, 9, 40, cfg.DataBytes/2 + 5, cfg.DataBytes + 3} {
				for _, inPlace := range []bool{false, true} {
					outs := make([][]byte, p)
					w.runOK(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
						sc, sd, rc, rd := make([]int, p), make([]int, p), make([]int, p), make([]int, p)
						var send []byte
						recvLen := 0
						for j := range p {
							sc[j], rc[j] = a2aCount(r, j, maxBlock), a2aCount(j, r, maxBlock)
							sd[j] = len(send)
							send = append(send, pattern(sc[j], r, j)...)
							rd[j] = recvLen + 3 // gaps between blocks stay untouched
							recvLen = rd[j] + rc[j]
						}
						recv := make([]byte, recvLen)
						if inPlace && len(send) <= len(recv) {
							copy(recv, send)
							send = recv[:len(send)]
						}
						outs[r] = recv
						if err := checkAllToAllV(a, send, sc, sd, recv, rc, rd); err != nil {
							return err
						}
						x := exchange{send: send, sendCounts: sc, sendDispls: sd, recv: recv, recvCounts: rc, recvDispls: rd}
						return x.run(ctx, a, seq, testTuning())
					})
					for r := range p {
						off := 0
						for j := range p {
							n := a2aCount(j, r, maxBlock)
							off += 3
							requireSameBytes(t, pattern(n, j, r), outs[r][off:off+n], "p=%d max=%d block %d->%d", p, maxBlock, j, r)
							off += n
						}
					}
				}
			}
		})
	}
}

func TestAllToAllVCountMismatch(t *testing.T) {
	const p = 3
	w := newWorld(t, p, testArenaConfig(""))
	errs := w.run(t, func(ctx context.Context, a *arena.Arena, r int, seq uint64) error {
		counts := []int{4, 4, 4}
		rcounts := []int{4, 4, 4}
		if r == 2 {
			rcounts[0] = 5 // rank 0 sends 4
		}
		displ := []int{0, 8, 16}
		return AllToAllV(ctx, a, seq, make([]byte, 24), counts, displ, make([]byte, 24), rcounts, displ)
	})
	// Every rank checks every pair in round 0: all of them fail alike.
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, "rank %d", r)
		require.ErrorIs(t, err, collectives.ErrInvalidArgument, "rank %d", r)
		assert.Contains(t, err.Error(), "rank 0 sends 4 bytes to rank 2, which expects 5", "rank %d", r)
	}
	// The ranks stopped after the same round: the arena is still usable.
	w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
}

func TestBarrier(t *testing.T) {
	for _, p := range worlds {
		w := newWorld(t, p, testArenaConfig(""))
		for range 20 {
			w.runOK(t, func(ctx context.Context, a *arena.Arena, _ int, seq uint64) error { return Barrier(ctx, a, seq) })
		}
	}
}
