package collectives

import (
	"context"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// wireLayout places the wire chunks of every block of a compressed ring in
// one buffer: block b's chunk k holds float32 elements
// [k·chunkElems, (k+1)·chunkElems) of the block, encoded.
type wireLayout struct {
	bl         blocks // the float32 blocks (bytes)
	chunkElems int
	off        []int // per block: offset of its first wire chunk
	total      int
}

func newWireLayout(bl blocks, chunkElems int) wireLayout {
	l := wireLayout{bl: bl, chunkElems: chunkElems, off: make([]int, len(bl.size))}
	for b, size := range bl.size {
		l.off[b] = l.total
		l.total += numChunks(size/f32Size, chunkElems) * wireBytes(chunkElems)
	}
	return l
}

func (l wireLayout) chunks(b int) int { return numChunks(l.bl.size[b]/f32Size, l.chunkElems) }

// values is chunk k of block b of a float32 buffer.
func (l wireLayout) values(buf []byte, b, k int) []byte {
	return chunkOf(l.bl.of(buf, b), k, l.chunkElems*f32Size)
}

// wire is the wire chunk of chunk k of block b in the wire buffer.
func (l wireLayout) wire(wire []byte, b, k int) []byte {
	n := min(l.chunkElems, l.bl.size[b]/f32Size-k*l.chunkElems)
	lo := l.off[b] + k*wireBytes(l.chunkElems)
	return wire[lo : lo+wireBytes(n)]
}

// compressWindowBytes bounds how far, in wire bytes, a sender runs ahead
// of its own receives (as ringWindow does for the uncompressed ring): what
// the receiving peer may have to buffer. It is large enough that a link of
// 1 Gbit/s stays busy through a 30 ms stall of the receiving goroutine
// (decoding takes CPU; on a loaded host a goroutine waits for it), and at
// least 4 chunks.
const compressWindowBytes = 4 << 20

// compressWindow is the send window in chunks of chunkBytes wire bytes.
func compressWindow(chunkBytes int) int {
	return max(4, compressWindowBytes/max(chunkBytes, 1))
}

// compressConcurrentBytes is the schedule size (bytes received) from which
// the compressed ring's two queues run in their own goroutines: lower than
// the exact pipeline's, as encoding and decoding give each chunk more work.
const compressConcurrentBytes = 32 << 10

// compressedRing is ringAllReduce (see allreduce_ring.go) with 16-bit wire
// chunks. Rank r sends to r+1 and receives from r-1; blocks B[0..p-1]:
//
//	reduce-scatter, step s = 0..p-2: send B[r-s] (at s = 0 this rank's
//	    input, encoded; later the partial received at step s-1, re-encoded
//	    there), receive B[r-s-1] and compute partial = input + decoded in
//	    float32. At s = p-2 the block is B[r+1] and complete: divided for
//	    Avg, encoded once more, and decoded back into recv by its owner.
//	all-gather, step t = 0..p-2: send B[r+1-t]'s wire chunks as they are,
//	    receive B[r-t]'s and decode them into recv.
//
// Sends encode their chunk just before they go (prepare), receives decode
// and accumulate theirs once landed (then).
//
// The wire buffer (half recv's size) holds every chunk that is forwarded
// as received, so no bit changes on its way around the ring. Each rank sends
// and receives 2(p-1)/p·n/2 bytes plus a 4-byte header per chunk.
func compressedRing(ctx context.Context, ep transport.Endpoint, tag transport.Tag, src, dst []byte, codec wireCodec, divide bool, chunkElems int) error {
	p, r := ep.Size(), ep.Rank()
	l := newWireLayout(evenBlocks(len(dst)/f32Size, f32Size, p), chunkElems)
	wire := make([]byte, l.total)
	largest := min(chunkElems*f32Size, l.bl.size[0]) // block 0 is the largest
	sendScratch, recvScratch := make([]byte, largest), make([]byte, largest)
	right, left := mod(r+1, p), mod(r-1, p)

	pl := &pipeline{ep: ep, tag: tag, name: "compressed ring", window: compressWindow(wireBytes(chunkElems)), concurrentBytes: compressConcurrentBytes}
	steps := 2 * (p - 1)
	firstRecv := make([]int, steps)   // index of the first receive of step g
	sendsBefore := make([]int, steps) // sends issued before step g
	for g := range steps {
		reduceScatter := g < p-1
		sb, rb := mod(r-g, p), mod(r-g-1, p)
		t := g - (p - 1)
		if !reduceScatter {
			sb, rb = mod(r+1-t, p), mod(r-t, p)
		}

		sendsBefore[g] = len(pl.sends)
		for k := range l.chunks(sb) {
			w := l.wire(wire, sb, k)
			it := sendItem{peer: right, step: g, buf: w}
			if g == 0 {
				in := l.values(src, sb, k)
				it.prepare = func() { codec.encode(w, in, sendScratch) }
			} else {
				it.after = firstRecv[g-1] + k + 1 // forwards that receive's chunk
			}
			pl.addSendItem(it)
		}

		firstRecv[g] = len(pl.recvs)
		for k := range l.chunks(rb) {
			w, acc := l.wire(wire, rb, k), l.values(dst, rb, k)
			it := recvItem{peer: left, step: g, buf: w}
			switch {
			case reduceScatter && g < p-2:
				in := l.values(src, rb, k)
				it.then = func() {
					codec.decodeAdd(acc, in, w, recvScratch)
					codec.encode(w, acc, recvScratch)
				}
			case reduceScatter:
				in := l.values(src, rb, k)
				it.then = func() {
					codec.decodeAdd(acc, in, w, recvScratch)
					if divide {
						reduce.DivideBy(reduce.Float32, acc, p)
					}
					codec.encode(w, acc, recvScratch)
					codec.decode(acc, w) // the owner keeps what the others get
				}
			default:
				// B[r-t]'s wire chunks were read by the sends of step t.
				it.after = sendsBefore[t] + l.chunks(rb)
				it.then = func() { codec.decode(acc, w) }
			}
			pl.addRecv(it)
		}
	}
	return pl.run(ctx)
}
