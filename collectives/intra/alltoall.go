package intra

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// AllToAllV sends send[sendDispls[j]:][:sendCounts[j]] to rank j, which
// receives it in recv[recvDispls[i]:][:recvCounts[i]], for every pair of
// ranks (local indices). Counts and displacements are in BYTES;
// sendCounts[j] on rank i must equal recvCounts[i] on rank j: every rank
// checks every pair in the first round, before any data is copied, and a
// mismatch fails the call on every rank (ErrMismatch) and leaves the arena
// usable. send and recv may overlap (send is then copied first).
//
// Rounds: each rank publishes, for every peer, the next chunk of the block
// for it (up to copyBytes), with a header of chunk lengths and a "more"
// flag (round 0 also carries all its send and receive counts); after the
// post it copies its own block; then it copies the chunks meant for it.
// Round 0's header goes through the inline slot, with each chunk that fits
// an inline slot beside it (a small exchange is one cache-line-sized
// round) and each larger one in the data half, so that a block of up to
// copyBytes moves in one round whatever the others' sizes; later rounds go
// through the data halves. The exchange ends after the first round in which
// no rank set "more". Per rank and byte it sends or receives: read 1 and
// write 1 on each side (own block: 1 and 1).
func AllToAllV(ctx context.Context, a *arena.Arena, seq uint64, send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int) error {
	if err := checkAllToAllV(a, send, sendCounts, sendDispls, recv, recvCounts, recvDispls); err != nil {
		return wrapOp("alltoallv", a, seq, err)
	}
	x := exchange{send: send, sendCounts: sendCounts, sendDispls: sendDispls,
		recv: recv, recvCounts: recvCounts, recvDispls: recvDispls}
	x.stamp = opStamp{kind: kindAllToAllV, seq: seq, root: noRoot}.encode()
	return wrapOp("alltoallv", a, seq, x.run(ctx, a, seq, defaultTuning()))
}

func checkAllToAllV(a *arena.Arena, send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int) error {
	if err := checkArena(a); err != nil {
		return err
	}
	p, me := a.Size(), a.Index()
	if err := checkLayout("send", send, sendCounts, sendDispls, p); err != nil {
		return err
	}
	if err := checkLayout("recv", recv, recvCounts, recvDispls, p); err != nil {
		return err
	}
	if sendCounts[me] != recvCounts[me] {
		return args.Invalidf("sendCounts[%d] = %d != recvCounts[%d] = %d (the block a rank sends itself)", me, sendCounts[me], me, recvCounts[me])
	}
	return nil
}

// checkLayout requires one block per rank, each inside buf.
func checkLayout(name string, buf []byte, counts, displs []int, p int) error {
	if len(counts) != p || len(displs) != p {
		return args.Invalidf("%d %s counts and %d displacements, want %d each", len(counts), name, len(displs), p)
	}
	for j := range p {
		if counts[j] < 0 || displs[j] < 0 || displs[j] > len(buf)-counts[j] {
			return args.Invalidf("%s block %d (count %d at %d) outside the %d-byte buffer", name, j, counts[j], displs[j], len(buf))
		}
	}
	return nil
}

// exchange is one AllToAllV in progress.
type exchange struct {
	send                   []byte
	sendCounts, sendDispls []int
	recv                   []byte
	recvCounts, recvDispls []int
	stamp                  arena.Stamp // posted with round 0
}

func (x exchange) run(ctx context.Context, a *arena.Arena, seq uint64, t tuning) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if args.Overlap(x.send, x.recv) {
		x.send = append([]byte(nil), x.send...) // keep the outgoing blocks intact
	}
	if err := a.Begin(seq); err != nil {
		return err
	}
	var mismatch, err error
	if a.Size() == 1 {
		x.copyOwn(a.Index())
	} else {
		mismatch, err = x.rounds(ctx, a, t)
	}
	endOp(a, err)
	if err != nil {
		return err
	}
	return mismatch
}

func (x exchange) copyOwn(me int) {
	c := x.sendCounts[me]
	copy(x.recv[x.recvDispls[me]:][:c], x.send[x.sendDispls[me]:][:c])
}

// A round's buffer: a header of 8-byte words, cache-line padded, then one
// slot per destination. The header holds the more flag, the chunk length
// for each destination, and in round 0 the sendCounts then the recvCounts
// of the publishing rank (see checkCounts).
func headerBytes(p int) int { return (8*(3*p+1) + lineBytes - 1) / lineBytes * lineBytes }

// Header word indices.
func chunkWord(j int) int        { return 1 + j }
func sendCountWord(p, j int) int { return 1 + p + j }
func recvCountWord(p, j int) int { return 1 + 2*p + j }
func headerWord(buf []byte, w int) int {
	return int(binary.LittleEndian.Uint64(buf[8*w:]))
}
func putHeaderWord(buf []byte, w, v int) { binary.LittleEndian.PutUint64(buf[8*w:], uint64(v)) }

// slotBytes is the per-destination capacity of a round buffer of size
// capacity, 0 when it cannot hold a header and a byte per rank.
func slotBytes(capacity, p int) int {
	s := (capacity - headerBytes(p)) / p
	if s >= lineBytes {
		s = s / lineBytes * lineBytes
	}
	return max(s, 0)
}

// rounds runs the exchange; mismatch reports counts that disagree with a
// peer's (the data was then not copied), err a failed wait.
func (x exchange) rounds(ctx context.Context, a *arena.Arena, t tuning) (mismatch, err error) {
	me, p := a.Index(), a.Size()
	l := roundLayout{hdr: headerBytes(p), inlineSlot: slotBytes(a.InlineBytes(), p)}
	l.halfSlot = slotBytes(min(a.HalfBytes(), l.hdr+p*t.copyBytes), p)
	if l.halfSlot == 0 {
		return nil, fmt.Errorf("data half of %d bytes too small for an exchange among %d ranks", a.HalfBytes(), p)
	}
	sent := make([]int, p) // bytes of the block for j published so far
	got := make([]int, p)  // bytes of the block from j received so far
	for k := 0; ; k++ {
		inline := k == 0 && l.inlineSlot > 0
		e := a.Next()
		buf := x.buffer(a, me, e, inline)
		more := false
		for j := range p {
			c := 0
			if j != me {
				c = min(l.halfSlot, x.sendCounts[j]-sent[j])
				copy(l.chunk(a, me, e, inline, j, c), x.send[x.sendDispls[j]+sent[j]:][:c])
				sent[j] += c
				more = more || sent[j] < x.sendCounts[j] || got[j]+min(l.halfSlot, x.recvCounts[j]-got[j]) < x.recvCounts[j]
			}
			putHeaderWord(buf, chunkWord(j), c)
			if k == 0 {
				putHeaderWord(buf, sendCountWord(p, j), x.sendCounts[j])
				putHeaderWord(buf, recvCountWord(p, j), x.recvCounts[j])
			}
		}
		binary.LittleEndian.PutUint64(buf, boolWord(more))
		post(a, e, x.stamp, k == 0)
		if k == 0 {
			x.copyOwn(me)
		}
		if err := await(ctx, a, e, x.stamp, k == 0); err != nil {
			return nil, err
		}
		if k == 0 {
			if err := checkCounts(a, func(j int) []byte { return x.buffer(a, j, e, inline) }); err != nil {
				return nil, err
			}
		}
		anyMore := false
		for j := range p {
			in := x.buffer(a, j, e, inline)
			anyMore = anyMore || binary.LittleEndian.Uint64(in) != 0
			if j == me {
				continue
			}
			c := headerWord(in, chunkWord(me))
			want := min(l.halfSlot, x.recvCounts[j]-got[j])
			if c != want { // cannot happen once checkCounts passed
				if mismatch == nil {
					mismatch = args.Invalidf("rank %d sends %d bytes in round %d, this rank expects %d (recvCounts[%d] = %d disagrees with that rank's sendCounts)",
						j, c, k, want, j, x.recvCounts[j])
				}
				c = 0 // keep to the protocol, move no data
			}
			copy(x.recv[x.recvDispls[j]+got[j]:][:c], l.chunk(a, j, e, inline, me, c))
			got[j] += want
		}
		if !anyMore {
			return mismatch, nil
		}
	}
}

// roundLayout is where a round's header and chunks lie: the header first,
// then a slot per destination, inlineSlot bytes each in an inline slot,
// halfSlot bytes each in a data half.
type roundLayout struct {
	hdr, inlineSlot, halfSlot int
}

// chunk is where rank r's chunk of c bytes for destination j lies in
// epoch e: in the inline slot when the round's header is there (inline)
// and c fits a slot of it, else in the data half. Sender and receiver
// both know c (the header holds it), so they agree.
func (l roundLayout) chunk(a *arena.Arena, r int, e uint64, inline bool, j, c int) []byte {
	if inline && c <= l.inlineSlot {
		return a.Inline(r, e)[l.hdr+j*l.inlineSlot:][:c]
	}
	return a.Half(r, e)[l.hdr+j*l.halfSlot:][:c]
}

// checkCounts compares, for every ordered pair of ranks, the bytes the
// sender will send with the bytes the receiver expects, from the counts all
// ranks published in round 0 (header(j) is rank j's round-0 buffer). Every
// rank reads the same counts, so all of them reach the same verdict in
// round 0 and none copies any data when it fails.
func checkCounts(a *arena.Arena, header func(j int) []byte) error {
	p := a.Size()
	ranks := a.Ranks()
	for from := range p {
		h := header(from)
		for to := range p {
			sends := headerWord(h, sendCountWord(p, to))
			expects := headerWord(header(to), recvCountWord(p, from))
			if from != to && sends != expects {
				return fmt.Errorf("%w: rank %d sends %d bytes to rank %d, which expects %d",
					ErrMismatch, ranks[from], sends, ranks[to], expects)
			}
		}
	}
	return nil
}

// buffer is rank j's round buffer of epoch e.
func (x exchange) buffer(a *arena.Arena, j int, e uint64, inline bool) []byte {
	if inline {
		return a.Inline(j, e)
	}
	return a.Half(j, e)
}

func boolWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
