package collectives_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// Tests of the collectives that move bytes without reducing them. The
// dtype only sets the element size, so one dtype per size class runs.

// randomBlocks returns one random block of n[r] bytes per rank.
func randomBlocks(name string, n []int) [][]byte {
	out := make([][]byte, len(n))
	for r := range n {
		out[r] = make([]byte, n[r])
		fillRandom(newRNG(seedOf(name), r), out[r])
	}
	return out
}

func concat(blocks [][]byte) []byte {
	var out []byte
	for _, b := range blocks {
		out = append(out, b...)
	}
	return out
}

func TestBroadcast(t *testing.T) {
	for _, p := range worlds {
		for ai, algo := range []collectives.Algorithm{collectives.Tree, collectives.Chain, collectives.Auto} {
			for _, dt := range sizeClasses() {
				for _, n := range counts(p) {
					if n == bigCount && !bigMoveFor(dt, p, ai) {
						continue
					}
					root := (n + ai) % p
					inPlace := n%2 == 1
					name := fmt.Sprintf("p%d/%s/%s/n%d/root%d/inplace=%v", p, algoName(algo), dt, n, root, inPlace)
					t.Run(name, func(t *testing.T) {
						data := randomBlocks(name, []int{n * dt.Size()})[0]
						recvs := make([][]byte, p)
						for r := range p {
							recvs[r] = garbage(len(data))
						}
						send := append([]byte(nil), data...)
						if inPlace {
							recvs[root] = send
						}
						o := collectives.Options{Algo: algo, ChunkBytes: 3000}
						requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
							r := ep.Rank()
							var s []byte // nil except on root
							if r == root {
								s = send
							}
							return collectives.Broadcast(ctx, ep, testTag, s, recvs[r], root, o)
						}))
						for r := range p {
							requireSameBytes(t, data, recvs[r], "rank %d", r)
						}
					})
				}
			}
		}
	}
}

func TestAllGather(t *testing.T) {
	for _, p := range worlds {
		for _, dt := range sizeClasses() {
			for _, n := range counts(p) {
				if n == bigCount {
					if !bigMoveFor(dt, p, 0) {
						continue
					}
					n /= p
				}
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("p%d/%s/n%d/inplace=%v", p, dt, n, inPlace)
					t.Run(name, func(t *testing.T) {
						sizes := make([]int, p)
						for i := range sizes {
							sizes[i] = n * dt.Size()
						}
						checkAllGather(t, name, sizes, false, inPlace)
					})
				}
			}
		}
	}
}

func TestAllGatherV(t *testing.T) {
	for _, p := range worlds {
		for _, dt := range sizeClasses() {
			for _, n := range counts(p) {
				if n == bigCount && !bigMoveFor(dt, p, 1) {
					continue
				}
				inPlace := n%2 == 0
				name := fmt.Sprintf("p%d/%s/n%d/inplace=%v", p, dt, n, inPlace)
				t.Run(name, func(t *testing.T) {
					sizes := unevenSplit(n, p)
					for i := range sizes {
						sizes[i] *= dt.Size()
					}
					checkAllGather(t, name, sizes, true, inPlace)
				})
			}
		}
	}
}

// checkAllGather gathers blocks of the given byte sizes, with AllGatherV
// when v is set (else AllGather: all sizes equal).
func checkAllGather(t *testing.T, name string, sizes []int, v, inPlace bool) {
	t.Helper()
	p := len(sizes)
	blocks := randomBlocks(name, sizes)
	want := concat(blocks)
	recvs, sends := make([][]byte, p), make([][]byte, p)
	off := 0
	for r := range p {
		recvs[r] = garbage(len(want))
		sends[r] = append([]byte(nil), blocks[r]...)
		if inPlace {
			copy(recvs[r][off:], blocks[r])
			sends[r] = recvs[r][off : off+sizes[r]]
		}
		off += sizes[r]
	}
	o := collectives.Options{ChunkBytes: 5000}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		if v {
			return collectives.AllGatherV(ctx, ep, testTag, sends[r], recvs[r], sizes, o)
		}
		return collectives.AllGather(ctx, ep, testTag, sends[r], recvs[r], o)
	}))
	for r := range p {
		requireSameBytes(t, want, recvs[r], "rank %d", r)
	}
}

func TestGatherScatter(t *testing.T) {
	for _, p := range worlds {
		for ai, dt := range sizeClasses() {
			for _, n := range counts(p) {
				if n == bigCount {
					if !bigMoveFor(dt, p, ai) {
						continue
					}
					n /= p
				}
				root := n % p
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("p%d/%s/n%d/root%d/inplace=%v", p, dt, n, root, inPlace)
					t.Run(name, func(t *testing.T) {
						checkGather(t, name, p, n*dt.Size(), root, inPlace)
						checkScatter(t, name, p, n*dt.Size(), root, inPlace)
					})
				}
			}
		}
	}
}

func checkGather(t *testing.T, name string, p, n, root int, inPlace bool) {
	t.Helper()
	sizes := make([]int, p)
	for i := range sizes {
		sizes[i] = n
	}
	blocks := randomBlocks(name+"/gather", sizes)
	want := concat(blocks)
	out := garbage(len(want))
	sends := make([][]byte, p)
	for r := range p {
		sends[r] = append([]byte(nil), blocks[r]...)
	}
	if inPlace {
		copy(out[root*n:], blocks[root])
		sends[root] = out[root*n : (root+1)*n]
	}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		var recv []byte
		if ep.Rank() == root {
			recv = out
		}
		return collectives.Gather(ctx, ep, testTag, sends[ep.Rank()], recv, root, collectives.Options{})
	}))
	requireSameBytes(t, want, out, "gather at root %d", root)
}

func checkScatter(t *testing.T, name string, p, n, root int, inPlace bool) {
	t.Helper()
	all := randomBlocks(name+"/scatter", []int{p * n})[0]
	send := append([]byte(nil), all...)
	recvs := make([][]byte, p)
	for r := range p {
		recvs[r] = garbage(n)
	}
	if inPlace {
		recvs[root] = send[root*n : (root+1)*n]
	}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		var s []byte
		if ep.Rank() == root {
			s = send
		}
		return collectives.Scatter(ctx, ep, testTag, s, recvs[ep.Rank()], root, collectives.Options{})
	}))
	for r := range p {
		requireSameBytes(t, all[r*n:(r+1)*n], recvs[r], "scatter to rank %d", r)
	}
}

// TestAllToAllV: block (i -> j) has a size depending on i, j and the case,
// zero-length ones included; in place uses one buffer with the same layout
// for send and recv (symmetric sizes).
func TestAllToAllV(t *testing.T) {
	for _, p := range worlds {
		for _, dt := range sizeClasses() {
			for _, n := range counts(p) {
				if n == bigCount {
					if !bigMoveFor(dt, p, 2) {
						continue
					}
					n /= p
				}
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("p%d/%s/n%d/inplace=%v", p, dt, n, inPlace)
					t.Run(name, func(t *testing.T) {
						checkAllToAllV(t, name, p, dt, n, inPlace)
					})
				}
			}
		}
	}
}

func checkAllToAllV(t *testing.T, name string, p int, dt reduce.DType, n int, inPlace bool) {
	t.Helper()
	es := dt.Size()
	// size[i][j]: bytes rank i sends rank j.
	size := make([][]int, p)
	for i := range p {
		size[i] = make([]int, p)
		for j := range p {
			k := (i*7 + j*3) % 4
			if inPlace {
				k = (i + j) % 4
			}
			size[i][j] = n * k / 3 * es
		}
	}
	// Rank i's send buffer: its blocks for j = p-1..0 (reversed, so the
	// displacements are not just prefix sums), with a gap of 5 bytes.
	type layout struct{ counts, displs []int }
	sendL, recvL := make([]layout, p), make([]layout, p)
	payload := make([][][]byte, p) // payload[i][j]: what i sends j
	for i := range p {
		sendL[i] = layout{make([]int, p), make([]int, p)}
		recvL[i] = layout{make([]int, p), make([]int, p)}
		off := 5
		for j := p - 1; j >= 0; j-- {
			sendL[i].counts[j], sendL[i].displs[j] = size[i][j], off
			off += size[i][j] + 5
		}
		off = 3
		for j := range p {
			recvL[i].counts[j], recvL[i].displs[j] = size[j][i], off
			off += size[j][i]
		}
		if inPlace { // size is symmetric: one layout serves both
			recvL[i] = sendL[i]
		}
		payload[i] = randomBlocks(fmt.Sprintf("%s/%d", name, i), size[i])
	}
	sends, recvs := make([][]byte, p), make([][]byte, p)
	for i := range p {
		end := 0
		for j := range p {
			end = max(end, sendL[i].displs[j]+sendL[i].counts[j], recvL[i].displs[j]+recvL[i].counts[j])
		}
		sends[i] = garbage(end)
		for j := range p {
			copy(sends[i][sendL[i].displs[j]:], payload[i][j])
		}
		recvs[i] = garbage(end)
		if inPlace {
			recvs[i] = sends[i]
		}
	}
	requireAllOK(t, runRanks(t, p, func(ctx context.Context, ep transport.Endpoint) error {
		r := ep.Rank()
		return collectives.AllToAllV(ctx, ep, testTag, sends[r], sendL[r].counts, sendL[r].displs, recvs[r], recvL[r].counts, recvL[r].displs, collectives.Options{})
	}))
	for i := range p {
		for j := range p {
			got := recvs[i][recvL[i].displs[j]:][:recvL[i].counts[j]]
			requireSameBytes(t, payload[j][i], got, "rank %d block from %d", i, j)
		}
	}
}
