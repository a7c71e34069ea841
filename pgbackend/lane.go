package pgbackend

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/intra"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/streams"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// The fast lane. A blocking all_reduce on a communicator whose ranks share
// this host runs at once on the calling thread when its stream is idle:
// export's C lane (export/lane.c) runs the arena's one-shot protocol
// (intra.LaneLimit: up to 256 KiB at 2 ranks) and its reduce-scatter/
// all-gather pipeline (intra.LanePipeline) in C, as it runs reduce,
// broadcast, all_gather, reduce_scatter and barrier (LaneOp, below),
// without entering the Go runtime, on the words of laneState, the
// stream's hold word, the arena's raw view and the flight recorder (Lane
// hands it their addresses). It holds the stream (the scheduler starts
// nothing there meanwhile, streams.Stream.TryHold), takes the next
// sequence number under the same locks as queued ops, records itself in
// the flight recorder as running, and posts the same epochs and stamps as
// the queued op would, so ranks that take the lane meet ranks that do not
// and a rank that calls another op fails alike. When a wait outlasts its
// spin, a stamp differs or a kernel declines, it hands the op over to
// FinishLaneAllReduce, FinishLanePipeline or FinishLaneOp, which finish it
// here with the op's deadline, failure handling and errors (concludeOp).
// What the C lane does not take runs at once in Go through RunNow (now.go)
// when its stream is idle, or is queued.
//
// The lane applies when the settings leave all_reduce to the arena
// (HCCL_GO_FAST_LANE on, HCCL_GO_ALGO auto or shm, no HCCL_GO_CHECK, no
// HCCL_GO_STREAM_WORKERS budget, which a caller's thread would bypass), and
// not after the communicator failed, was aborted or destroyed (off).
// Abort and Destroy wait for ops in the lane before they unmap the arenas.

// laneState holds the words the C fast lane shares with the communicator.
// Export keeps it from moving while C holds their addresses
// (runtime.Pinner).
type laneState struct {
	// issue is taken, under issueMu, when an op takes its sequence number
	// and is queued; the C lane takes it alone, and falls back to Go's
	// path when it finds it taken.
	issue spinLock
	// off is non-zero once no op may take the lane: the communicator failed,
	// was aborted or destroyed.
	off atomic.Uint32
	// seq is the collective sequence number, identical across ranks.
	seq atomic.Uint64
}

// laneOn reports whether the settings let all_reduce take the fast lane.
func (c *Communicator) laneOn() bool {
	a := c.cfg.AlgoFor("allreduce")
	return c.cfg.FastLane && !c.cfg.Check && c.cfg.StreamWorkers == 0 && (a == collectives.Auto || a == "shm")
}

// laneApplies reports whether all_reduces of this communicator may ever
// take the fast lane: its ranks share this host and the settings allow it.
func (c *Communicator) laneApplies() bool {
	return c.laneOn() && c.laneLimit(StreamDefault) >= 0
}

// laneLimit is the largest all_reduce (bytes) that takes the lane on
// stream i (-1: none).
// Only an arena of every rank of the communicator can carry it: in a
// multi-host communicator the arena holds this host's ranks alone.
func (c *Communicator) laneLimit(i int) int {
	if a := c.arenas[i]; a == nil || a.Size() != c.size {
		return -1
	}
	return intra.LaneLimit(c.arenas[i])
}

// stopLane keeps ops from taking the fast lane from now on.
func (c *Communicator) stopLane() { c.lane.off.Store(1) }

// waitLane waits until no op is in the fast lane (which holds its
// stream): ops that took it before stopLane end quickly once the
// communicator's context is cancelled.
func (c *Communicator) waitLane() {
	for _, st := range c.streams {
		for st.Held() {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// KickStream starts what was queued on stream i while the C lane held it
// (streams.Stream.Kick).
func (c *Communicator) KickStream(i int) { c.streams[i].Kick() }

// laneDesc describes an all_reduce of the fast lane.
func (c *Communicator) laneDesc(seq uint64, stream, n int, dt reduce.DType, op reduce.Op) opDesc {
	d := reduction("allreduce", n, dt, op, -1)
	d.Seq, d.Stream, d.Route, d.Algo = seq, stream, "arena", c.cfg.AlgoFor("allreduce")
	return d
}

// holdIdle holds stream when it is idle and gives the op about to run
// there at once the next sequence number, under the locks that queued ops
// take theirs with (submitCollective); held false: the stream was busy,
// nothing was taken.
func (c *Communicator) holdIdle(stream int) (seq uint64, held bool) {
	c.issueMu.Lock()
	defer c.issueMu.Unlock()
	c.lane.issue.Lock()
	defer c.lane.issue.Unlock()
	if !c.streams[stream].TryHold() {
		return 0, false
	}
	return c.lane.seq.Add(1), true
}

// LaneHandover is an all_reduce that export's C fast lane began and hands
// over to FinishLaneAllReduce: it holds Stream, took sequence number Seq,
// recorded itself in the flight recorder as entry ID, running since
// Started (after the communicator's clock epoch), and posted Epoch with its
// input; Recv, DType and Op are the call's.
type LaneHandover struct {
	Stream  int
	Seq, ID uint64
	Epoch   uint64
	Started time.Duration
	Recv    []byte
	DType   reduce.DType
	Op      reduce.Op
}

// FinishLaneAllReduce finishes an all_reduce that the C fast lane began
// (LaneHandover): it waits for the peers within the op's deadline, checks
// their stamps, reduces, records the op's end and lets go of the stream.
// Its error is the one the op would have had on the queued path.
func (c *Communicator) FinishLaneAllReduce(h LaneHandover) error {
	return c.finishLane(h, c.laneDesc(h.Seq, h.Stream, len(h.Recv), h.DType, h.Op), func(ctx *opContext) error {
		return intra.FinishLaneAllReduce(ctx, c.arenas[h.Stream], h.Seq, h.Epoch, h.Recv, h.DType, h.Op)
	})
}

// LanePipelineHandover is an all_reduce pipeline that export's C fast
// lane began and hands over to FinishLanePipeline: as LaneHandover, with
// the round it stopped in (Epoch is that round's, posted; Waited: the
// peers were seen to post it) and the call's Send and PreMul.
type LanePipelineHandover struct {
	LaneHandover
	Round  int
	Waited bool
	Send   []byte
	PreMul float64
	// Root is a reduce's root (Recv nil elsewhere); -1: an all_reduce.
	Root int
}

// FinishLanePipeline finishes an all_reduce or reduce pipeline that the C
// fast lane began (intra.FinishLanePipeline) within the op's deadline,
// records its end and lets go of the stream, as FinishLaneAllReduce does.
func (c *Communicator) FinishLanePipeline(h LanePipelineHandover) error {
	d := c.laneDesc(h.Seq, h.Stream, len(h.Send), h.DType, h.Op)
	if h.Root >= 0 {
		d = c.laneOpDesc(LaneReduce, h.Seq, h.Stream, len(h.Send), h.DType, h.Op, h.Root)
	}
	return c.finishLane(h.LaneHandover, d, func(ctx *opContext) error {
		return intra.FinishLanePipeline(ctx, c.arenas[h.Stream], h.Seq, h.Epoch, h.Round, h.Waited, h.Send, h.Recv, h.DType, h.Op, h.PreMul, h.Root)
	})
}

// NoteLanePlace records where the C fast lane's wait on stream runs
// when it stops spinning and finds local rank j on its CPU at epoch e
// (arena.NotePlace): the lane's waits keep the ranks apart as Go's do.
func (c *Communicator) NoteLanePlace(stream, j int, e uint64) {
	if stream >= 0 && stream < len(c.arenas) && c.arenas[stream] != nil {
		c.arenas[stream].NotePlace(j, e)
	}
}

// LaneOp is one of the other ops the C fast lane runs (intra's
// lane_ops.go), as its stamp, flight record and settings name it.
type LaneOp int

const (
	LaneBroadcast LaneOp = iota
	LaneAllGather
	LaneBarrier
	LaneReduce
	LaneReduceScatter
	laneOps
)

// kind is the op's name in descriptions, statistics and settings.
func (o LaneOp) kind() string {
	return [...]string{LaneBroadcast: "broadcast", LaneAllGather: "allgather", LaneBarrier: "barrier",
		LaneReduce: "reduce", LaneReduceScatter: "reducescatter"}[o]
}

// LaneOpHandover is an op of LaneOp's that export's C fast lane began and
// hands over to FinishLaneOp: as LaneHandover, with the op (Kind), its
// Root (broadcast, reduce), its Send (broadcast on root, all_gather,
// reduce_scatter) and its payload's Bytes (reduce: Recv is nil off
// root). Recv is the whole output: an all_gather's p blocks, nil for a
// barrier; DType and Op are the reductions'.
type LaneOpHandover struct {
	LaneHandover
	Kind   LaneOp
	Root   int
	Send   []byte
	Bytes  int
	PreMul float64
	// Offset and Waited: where a broadcast, all_gather or reduce_scatter
	// stopped (the chunk at Offset of each block, its epoch posted;
	// Waited: the peers were seen to post it).
	Offset int
	Waited bool
}

// FinishLaneOp finishes an op that the C fast lane began (intra's
// FinishLane* of lane_ops.go) within the op's deadline, records its end
// and lets go of the stream, as FinishLaneAllReduce does.
func (c *Communicator) FinishLaneOp(h LaneOpHandover) error {
	d := c.laneOpDesc(h.Kind, h.Seq, h.Stream, len(h.Recv), h.DType, h.Op, h.Root)
	switch h.Kind {
	case LaneReduce:
		d.Bytes = h.Bytes
	case LaneReduceScatter:
		d.Bytes = len(h.Send)
	}
	return c.finishLane(h.LaneHandover, d, func(ctx *opContext) error {
		a := c.arenas[h.Stream]
		switch h.Kind {
		case LaneBroadcast:
			return intra.FinishLaneBroadcast(ctx, a, h.Seq, h.Epoch, h.Offset, h.Send, h.Recv, h.Root)
		case LaneAllGather:
			return intra.FinishLaneAllGather(ctx, a, h.Seq, h.Epoch, h.Offset, h.Send, h.Recv)
		case LaneReduce:
			return intra.FinishLaneReduce(ctx, a, h.Seq, h.Epoch, h.Bytes, h.Recv, h.DType, h.Op, h.Root)
		case LaneReduceScatter:
			return intra.FinishLaneReduceScatter(ctx, a, h.Seq, h.Epoch, h.Offset, h.Waited, h.Send, h.Recv, h.DType, h.Op, h.PreMul)
		default:
			return intra.FinishLaneBarrier(ctx, a, h.Seq, h.Epoch)
		}
	})
}

// laneOpDesc describes an op of the fast lane as its Call does (dt, op:
// -1 for the data movers; root -1: none).
func (c *Communicator) laneOpDesc(o LaneOp, seq uint64, stream, n int, dt reduce.DType, op reduce.Op, root int) opDesc {
	d := movement(o.kind(), n, -1)
	if o == LaneReduce || o == LaneReduceScatter {
		d = reduction(o.kind(), n, dt, op, -1)
	}
	if o == LaneBroadcast || o == LaneReduce {
		d.Root = root
	}
	d.Seq, d.Stream, d.Route, d.Algo = seq, stream, "arena", c.cfg.AlgoFor(o.kind())
	return d
}

// laneOpOn reports whether the settings leave op o to the arena.
func (c *Communicator) laneOpOn(o LaneOp) bool {
	a := c.cfg.AlgoFor(o.kind())
	return a == collectives.Auto || a == "shm"
}

// finishLane finishes an op the C lane handed over: finish runs the rest
// of it under the op's context (its deadline); then the op is concluded as
// a queued one is (concludeOp, as desc) and its stream let go.
func (c *Communicator) finishLane(h LaneHandover, desc opDesc, finish func(ctx *opContext) error) error {
	start := c.clock.At(h.Started)
	var ctx opContext
	ctx.init(c.ctx, start.Add(c.cfg.Timeout), c.stats.kind(desc.Kind))
	defer ctx.release()
	_, err := c.concludeOp(h.ID, desc, start, &ctx, finish(&ctx))
	c.streams[h.Stream].Release()
	return err
}

// LaneView is what export's C fast lane works on: the addresses of the
// words it shares with this communicator (see the top of this file). They
// are Go memory: the caller keeps it from moving or being freed while C
// holds them (runtime.Pinner on each pointer), and must be done with them
// when Destroy returns. Shared memory (the arenas) is given as addresses.
type LaneView struct {
	Issue *atomic.Uint32 // the issue lock: 0 free, 1 taken (spinLock)
	Off   *atomic.Uint32 // non-zero: no op may take the lane
	Seq   *atomic.Uint64 // the collective sequence number
	// Flight is the flight recorder's shared words (lock, next id,
	// per-stream progress) and Ring its first slot (nil: the recorder is
	// off), RingLen slots; FlightLayout says where their fields lie.
	Flight       unsafe.Pointer
	Ring         unsafe.Pointer
	RingLen      int
	FlightLayout FlightLayout
	// Desc is a lane op's flight record desc without its dtype, reduce op
	// and stream (see packDesc); StateRunning and StateDone its states.
	Desc                    uint64
	StateRunning, StateDone uint64
	DescDType, DescRedOp    uint
	DescStream              uint
	Calls                   *atomic.Int64 // all_reduce calls (Stats)
	Clock                   streams.Clock // the times of the flight recorder
	Streams                 []LaneStream  // by stream index
	// Ops are the other ops, by LaneOp: whether the settings leave each to
	// the arena, its flight record desc (as Desc) and its calls.
	Ops [laneOps]LaneOpView
}

// LaneOpView is one of the other ops as the C lane sees it.
type LaneOpView struct {
	On    bool
	Desc  uint64
	Calls *atomic.Int64
}

// LaneStream is one collective stream as the C lane sees it.
type LaneStream struct {
	Hold  *atomic.Uint32 // streams.Stream.HoldWord
	Arena arena.Raw
	Limit int // the largest all_reduce in the lane, bytes (intra.LaneLimit; -1: none)
	// The lane declines payloads from SingleCopyMin to SingleCopyMax bytes
	// while *SingleCopyState is not SingleCopyOff (intra.SingleCopyWords; nil:
	// never).
	SingleCopyState              *int32
	SingleCopyMin, SingleCopyMax int
	SingleCopyOff                int32
	// From PipeMin bytes on, the lane runs the all_reduce pipeline with
	// slices of PipeSlot bytes (intra.LanePipeline; PipeMin -1: never, as
	// where the NUMA level may take large ops).
	PipeMin, PipeSlot int
	// OpsOn: the lane runs the other ops (LaneOp) on this stream (false
	// where the NUMA level may take ops), reduce_scatter in chunks of
	// ScatterSlot bytes of each block (intra.LaneScatterSlot), broadcast
	// and all_gather beyond an inline slot in chunks of MoveChunk bytes of
	// each block (intra.LaneMoveChunk). All_gathers whose recv has from
	// GatherSingleCopyMin to GatherSingleCopyMax bytes are declined while
	// *GatherSingleCopyState is not SingleCopyOff
	// (intra.SingleCopyGatherWords; nil: never).
	OpsOn                                    bool
	ScatterSlot, MoveChunk                   int
	GatherSingleCopyState                    *int32
	GatherSingleCopyMin, GatherSingleCopyMax int
}

// FlightLayout gives the byte offsets of the flight recorder's words:
// within a slot (whose size is SlotSize), and within the shared words
// (Progress is the first stream's progress, ProgressSize apart).
type FlightLayout struct {
	SlotSize, ID, Seq, Bytes, Desc, State, RootPeer, Tag, Counts, Enqueued, Started, Ended uintptr
	Lock, Next, Progress, ProgressSize, ProgressStarted, ProgressEnded, ProgressSince      uintptr
}

// Lane returns the view of the fast lane for code outside Go, or ok false
// when the lane never applies to this communicator (its ranks are not all
// on this host, or the settings keep all_reduce off it).
func (c *Communicator) Lane() (v LaneView, ok bool) {
	if !c.laneApplies() {
		return LaneView{}, false
	}
	f := c.flight
	v = LaneView{
		Issue: &c.lane.issue.w, Off: &c.lane.off, Seq: &c.lane.seq,
		Flight: unsafe.Pointer(f.sh), RingLen: len(f.ring), FlightLayout: flightLayout(),
		StateRunning: uint64(stateRunning), StateDone: uint64(stateDone),
		DescDType: descDType, DescRedOp: descRedOp, DescStream: descStream,
		Calls: &c.stats.kind("allreduce").calls, Clock: c.clock,
	}
	if len(f.ring) > 0 {
		v.Ring = unsafe.Pointer(&f.ring[0])
	}
	d := c.laneDesc(0, StreamDefault, 0, 0, 0)
	d.DType, d.RedOp, d.Stream = -1, -1, -1 // their bytes are the C lane's to fill
	v.Desc = f.names.pack(d)
	for o := range laneOps {
		d := c.laneOpDesc(o, 0, StreamDefault, 0, -1, -1, -1)
		d.DType, d.RedOp, d.Stream = -1, -1, -1
		v.Ops[o] = LaneOpView{On: c.laneOpOn(o), Desc: f.names.pack(d), Calls: &c.stats.kind(o.kind()).calls}
	}
	for i, st := range c.streams {
		ls := LaneStream{Hold: st.HoldWord(), Limit: c.laneLimit(i), SingleCopyOff: intra.SingleCopyOff, PipeMin: -1}
		if a := c.arenas[i]; a != nil {
			ls.Arena = a.Raw()
			ls.SingleCopyState, ls.SingleCopyMin, ls.SingleCopyMax = intra.SingleCopyWords(c.singleCopy[i], a.Size())
			if ls.Limit >= 0 && !c.numa.on(i) {
				ls.PipeMin, ls.PipeSlot = intra.LanePipeline(a)
				ls.ScatterSlot, ls.MoveChunk = intra.LaneScatterSlot(a), intra.LaneMoveChunk(a)
				ls.OpsOn = ls.ScatterSlot > 0 && ls.MoveChunk > 0
				ls.GatherSingleCopyState, ls.GatherSingleCopyMin, ls.GatherSingleCopyMax = intra.SingleCopyGatherWords(c.singleCopyGather[i])
			}
		}
		v.Streams = append(v.Streams, ls)
	}
	return v, true
}

func flightLayout() FlightLayout {
	var s flightSlot
	var sh flightShared
	var p flightProgress
	return FlightLayout{
		SlotSize: unsafe.Sizeof(s), ID: unsafe.Offsetof(s.id), Seq: unsafe.Offsetof(s.seq),
		Bytes: unsafe.Offsetof(s.bytes), Desc: unsafe.Offsetof(s.desc), State: unsafe.Offsetof(s.state),
		RootPeer: unsafe.Offsetof(s.rootPeer), Tag: unsafe.Offsetof(s.tag), Counts: unsafe.Offsetof(s.counts),
		Enqueued: unsafe.Offsetof(s.enqueued), Started: unsafe.Offsetof(s.started), Ended: unsafe.Offsetof(s.ended),
		Lock: unsafe.Offsetof(sh.lock), Next: unsafe.Offsetof(sh.next), Progress: unsafe.Offsetof(sh.progress),
		ProgressSize: unsafe.Sizeof(p), ProgressStarted: unsafe.Offsetof(p.started),
		ProgressEnded: unsafe.Offsetof(p.ended), ProgressSince: unsafe.Offsetof(p.since),
	}
}
