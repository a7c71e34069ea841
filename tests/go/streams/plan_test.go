package streams_test

import (
	"encoding/binary"
	"math/rand/v2"
)

// A plan is the same random sequence of ops on every rank (collectives must
// be issued in the same order everywhere); each op knows its inputs and
// its expected outputs, so every result is checked.

type kind int

const (
	allReduce kind = iota
	allGather
	broadcast
	reduceScatter
	allToAll
	reduceMax
	barrier
	sendRecv // point to point: src sends, dst receives
	numKinds
)

func (k kind) String() string {
	return [...]string{"allreduce", "allgather", "broadcast", "reducescatter", "alltoall", "reduce", "barrier", "sendrecv"}[k]
}

type planOp struct {
	index  int
	kind   kind
	stream int
	n      int // elements (per rank block for allgather, reducescatter, alltoall)
	root   int // broadcast and reduce root; sendrecv source
	dst    int // sendrecv destination
}

// makePlan draws count ops over streams streams for size ranks. Sizes are
// mostly small, some medium, a few large (up to 256 KiB per buffer).
func makePlan(seed uint64, count, size, streams int) []planOp {
	rng := rand.New(rand.NewPCG(seed, 7))
	plan := make([]planOp, count)
	for i := range plan {
		op := planOp{index: i, kind: kind(rng.IntN(int(numKinds))), stream: rng.IntN(streams), root: rng.IntN(size)}
		switch p := rng.IntN(100); {
		case p < 70:
			op.n = 1 + rng.IntN(256)
		case p < 95:
			op.n = 256 + rng.IntN(8192-256)
		default:
			op.n = 8192 + rng.IntN(65536-8192)
		}
		if op.kind == allGather || op.kind == reduceScatter || op.kind == allToAll {
			op.n = max(1, op.n/size)
		}
		op.dst = (op.root + 1 + rng.IntN(size-1)) % size
		plan[i] = op
	}
	return plan
}

// val is element j of rank r's input to op i.
func val(i, r, j int) int32 { return int32((i*31+r*1000003+j*7)%2001) - 1000 }

func input(i, r, n int) []byte {
	b := make([]byte, 4*n)
	for j := range n {
		binary.LittleEndian.PutUint32(b[4*j:], uint32(val(i, r, j)))
	}
	return b
}

// expected is what rank q must hold after op (nil: no output to check).
func expected(op planOp, q, size int) []int32 {
	i, n := op.index, op.n
	out := make([]int32, 0, n*size)
	switch op.kind {
	case allReduce:
		for j := range n {
			var s int32
			for r := range size {
				s += val(i, r, j)
			}
			out = append(out, s)
		}
	case allGather:
		for r := range size {
			for j := range n {
				out = append(out, val(i, r, j))
			}
		}
	case broadcast:
		for j := range n {
			out = append(out, val(i, op.root, j))
		}
	case reduceScatter:
		for j := range n {
			var s int32
			for r := range size {
				s += val(i, r, q*n+j)
			}
			out = append(out, s)
		}
	case allToAll:
		for p := range size {
			for j := range n {
				out = append(out, val(i, p, q*n+j))
			}
		}
	case reduceMax:
		if q != op.root {
			return nil
		}
		for j := range n {
			m := val(i, 0, j)
			for r := 1; r < size; r++ {
				m = max(m, val(i, r, j))
			}
			out = append(out, m)
		}
	case sendRecv:
		if q != op.dst {
			return nil
		}
		for j := range n {
			out = append(out, val(i, op.root, j))
		}
	default:
		return nil
	}
	return out
}

func decode(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for j := range out {
		out[j] = int32(binary.LittleEndian.Uint32(b[4*j:]))
	}
	return out
}
