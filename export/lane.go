package main

/*
#cgo CFLAGS: -I${SRCDIR}/../collectives/reduce
#include <stdlib.h>
#include "kernels.h"
#include "lane.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
)

// The C fast lane (lane.c): hcclGoAllReduce, hcclGoBroadcast,
// hcclGoAllGather, hcclGoBarrier, hcclGoReduce and hcclGoReduceScatter
// called with a NULL work pointer run the op in C, without entering the Go runtime, when the
// communicator's fast lane applies (pgbackend/lane.go). Here a
// communicator's lane is registered with C at init and freed at destroy,
// and the ops C hands over are finished. C holds addresses of Go memory
// (the communicator's lane words, flight recorder, streams' hold words,
// arenas' epochs), so each registration pins what it hands out until the
// lane is freed.

// laneReg is one communicator's registration.
type laneReg struct {
	pin runtime.Pinner
}

// laneComms are the communicators with a registered lane, by handle: the
// ops C hands over find theirs here, also while its handle is being
// destroyed (until hg_lane_free has returned).
var laneComms sync.Map // uint64 -> *commEntry

// registerLane gives communicator h its C lane if its fast lane applies.
func registerLane(h uint64, e *commEntry) {
	v, ok := e.c.Lane()
	if !ok || len(v.Streams) > C.HG_LANE_MAX_STREAMS {
		return
	}
	raw := v.Streams[pgbackend.StreamDefault].Arena
	if raw.Size > C.HG_LANE_MAX_RANKS {
		return
	}
	reg := &laneReg{}
	l := C.hg_lane_new()
	l.comm = C.uint64_t(h)
	l.index, l.size, l.nstreams = C.int(raw.Index), C.int(raw.Size), C.int(len(v.Streams))
	l.inline_bytes = C.size_t(raw.InlineBytes)
	l.spin_ns, l.yield_ns = C.longlong(raw.Spin.Nanoseconds()), C.longlong(raw.Yield.Nanoseconds())
	l.isa = C.hg_best_isa()
	l.issue = (*C.uint32_t)(pinned(&reg.pin, unsafe.Pointer(v.Issue)))
	l.off = (*C.uint32_t)(pinned(&reg.pin, unsafe.Pointer(v.Off)))
	l.seq = (*C.uint64_t)(pinned(&reg.pin, unsafe.Pointer(v.Seq)))
	l.calls = (*C.int64_t)(pinned(&reg.pin, unsafe.Pointer(v.Calls)))
	l.flight = (*C.uchar)(pinned(&reg.pin, v.Flight))
	if v.Ring != nil {
		l.ring, l.ring_len = (*C.uchar)(pinned(&reg.pin, v.Ring)), C.uint64_t(v.RingLen)
	}
	f := v.FlightLayout
	l.layout = C.struct_hg_flight_layout{
		slot_size: C.size_t(f.SlotSize), id: C.size_t(f.ID), seq: C.size_t(f.Seq), bytes: C.size_t(f.Bytes),
		desc: C.size_t(f.Desc), state: C.size_t(f.State), root_peer: C.size_t(f.RootPeer), tag: C.size_t(f.Tag),
		counts: C.size_t(f.Counts), enqueued: C.size_t(f.Enqueued), started: C.size_t(f.Started), ended: C.size_t(f.Ended),
		lock: C.size_t(f.Lock), next: C.size_t(f.Next), progress: C.size_t(f.Progress),
		progress_size: C.size_t(f.ProgressSize), progress_started: C.size_t(f.ProgressStarted),
		progress_ended: C.size_t(f.ProgressEnded), progress_since: C.size_t(f.ProgressSince),
	}
	l.desc, l.desc_dtype, l.desc_op, l.desc_stream = C.uint64_t(v.Desc), C.uint(v.DescDType), C.uint(v.DescRedOp), C.uint(v.DescStream)
	l.state_running, l.state_done = C.uint64_t(v.StateRunning), C.uint64_t(v.StateDone)
	for o, ov := range v.Ops {
		lo := &l.ops[o]
		if ov.On {
			lo.on = 1
		}
		lo.desc = C.uint64_t(ov.Desc)
		lo.calls = (*C.int64_t)(pinned(&reg.pin, unsafe.Pointer(ov.Calls)))
	}
	l.clock_base = C.longlong(clockBase(v))
	for i, st := range v.Streams {
		s := &l.streams[i]
		s.hold = (*C.uint32_t)(pinned(&reg.pin, unsafe.Pointer(st.Hold)))
		a := st.Arena
		if a.Epoch == nil || a.Size != raw.Size || a.InlineBytes != raw.InlineBytes || st.Limit < 0 {
			continue // no arena on this stream: Go's path
		}
		s.on, s.limit = 1, C.size_t(st.Limit)
		if st.PipeMin > 0 && st.PipeSlot > 0 {
			s.pipe_min, s.pipe_slot = C.size_t(st.PipeMin), C.size_t(st.PipeSlot)
		}
		if st.SingleCopyState != nil {
			s.sc_state = (*C.int32_t)(pinned(&reg.pin, unsafe.Pointer(st.SingleCopyState)))
			s.sc_off, s.sc_min, s.sc_max = C.int32_t(st.SingleCopyOff), C.size_t(st.SingleCopyMin), C.size_t(st.SingleCopyMax)
		}
		if st.OpsOn {
			s.ops_on, s.scatter_slot, s.move_chunk = 1, C.size_t(st.ScatterSlot), C.size_t(st.MoveChunk)
		}
		if st.GatherSingleCopyState != nil {
			s.scg_state = (*C.int32_t)(pinned(&reg.pin, unsafe.Pointer(st.GatherSingleCopyState)))
			s.scg_off, s.scg_min, s.scg_max = C.int32_t(st.SingleCopyOff), C.size_t(st.GatherSingleCopyMin), C.size_t(st.GatherSingleCopyMax)
		}
		s.epoch = (*C.uint64_t)(pinned(&reg.pin, unsafe.Pointer(a.Epoch)))
		s.closed = (*C.uint32_t)(pinned(&reg.pin, unsafe.Pointer(a.Closed)))
		s.colocated = (*C.int32_t)(pinned(&reg.pin, unsafe.Pointer(a.Colocated)))
		for j := range a.Size {
			C.hg_lane_set_rank(s, C.int(j), C.uintptr_t(a.Posted[j]), C.uintptr_t(a.Waiters[j]), C.uintptr_t(a.Bells[j]), C.uintptr_t(a.Places[j]))
			for par := range 2 {
				C.hg_lane_set_slot(s, C.int(par), C.int(j), C.uintptr_t(a.Flags[par][j]), C.uintptr_t(a.Stamps[par][j]),
					C.uintptr_t(a.Inline[par][j]), C.uintptr_t(a.Half[par][j]))
			}
		}
	}
	laneComms.Store(h, e)
	if C.hg_lane_register(l) == 0 { // every place taken: RunNow serves its ops
		laneComms.Delete(h)
		C.free(unsafe.Pointer(l))
		reg.pin.Unpin()
		return
	}
	e.lane = reg
}

// stopLane keeps new ops of communicator h out of its C lane.
func stopLane(h uint64, e *commEntry) {
	if e.lane != nil {
		C.hg_lane_stop(C.uint64_t(h))
	}
}

// freeLane frees communicator h's C lane once no op is in it; call after
// the communicator is destroyed.
func freeLane(h uint64, e *commEntry) {
	if e.lane == nil {
		return
	}
	C.hg_lane_free(C.uint64_t(h))
	laneComms.Delete(h)
	e.lane.pin.Unpin()
	e.lane = nil
}

// laneRan is how many ops communicator h's C lane ran from start to end,
// by kind (comm_info's fast_lane_ops); kinds with none are left out.
func laneRan(h uint64) map[string]int64 {
	kinds := [C.HG_OPS + 1]string{"allreduce", C.HG_OP_BROADCAST + 1: "broadcast", C.HG_OP_ALLGATHER + 1: "allgather",
		C.HG_OP_BARRIER + 1: "barrier", C.HG_OP_REDUCE + 1: "reduce", C.HG_OP_REDUCESCATTER + 1: "reducescatter"}
	ran := map[string]int64{}
	for i, k := range kinds {
		if n := int64(C.hg_lane_ran(C.uint64_t(h), C.int(i))); n > 0 {
			ran[k] = n
		}
	}
	return ran
}

// laneOpsAgree reports whether C numbers the lane's other ops as
// pgbackend.LaneOp does (a test checks it).
func laneOpsAgree() bool {
	return C.HG_OP_BROADCAST == int(pgbackend.LaneBroadcast) && C.HG_OP_ALLGATHER == int(pgbackend.LaneAllGather) &&
		C.HG_OP_BARRIER == int(pgbackend.LaneBarrier) && C.HG_OP_REDUCE == int(pgbackend.LaneReduce) &&
		C.HG_OP_REDUCESCATTER == int(pgbackend.LaneReduceScatter) && C.HG_OPS == len(pgbackend.LaneView{}.Ops)
}

// pinned pins the Go object p points into and returns p.
func pinned(pin *runtime.Pinner, p unsafe.Pointer) unsafe.Pointer {
	pin.Pin(p)
	return p
}

// clockBase is the CLOCK_MONOTONIC reading, in ns, at the epoch of the
// communicator's clock, so that C's readings of that clock (ns since the
// epoch, as the flight recorder keeps times) agree with Go's: taken
// between two Go readings, it is off by at most half the time between them.
func clockBase(v pgbackend.LaneView) int64 {
	before := v.Clock.Offset(v.Clock.Now())
	mono := int64(C.hg_lane_now_ns())
	after := v.Clock.Offset(v.Clock.Now())
	return mono - int64(before+(after-before)/2)
}

// laneComm is the communicator whose lane C hands an op over from.
func laneComm(comm C.uint64_t) (*commEntry, bool) {
	v, ok := laneComms.Load(uint64(comm))
	if !ok {
		return nil, false
	}
	return v.(*commEntry), true
}

// goLaneFinish finishes an all_reduce that the C lane began and hands
// over (pgbackend.FinishLaneAllReduce): its wait outlasted the spin, a
// peer's stamp differs, or a kernel declined the reduction.
//
//export goLaneFinish
func goLaneFinish(comm C.uint64_t, stream C.int, seq, id, epoch C.uint64_t, started C.int64_t, recv unsafe.Pointer, count C.size_t, dt, op C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, ok := laneComm(comm)
	if !ok { // cannot happen: a lane is freed only once no op is in it
		return fail(nil, invalid("fast lane of communicator %d is gone", uint64(comm)))
	}
	d := reduce.DType(dt)
	var buf []byte
	if n := int(count) * d.Size(); n > 0 {
		buf = unsafe.Slice((*byte)(recv), n)
	}
	err := e.c.FinishLaneAllReduce(pgbackend.LaneHandover{
		Stream: int(stream), Seq: uint64(seq), ID: uint64(id), Epoch: uint64(epoch),
		Started: time.Duration(started), Recv: buf, DType: d, Op: reduce.Op(op),
	})
	if err != nil {
		return fail(e, err)
	}
	return C.hcclGoSuccess
}

// goLaneFinishPipeline finishes an all_reduce pipeline (root -1) or a
// reduce pipeline to root that the C lane began and hands over in round k
// (pgbackend.FinishLanePipeline): a wait outlasted the spin, a peer's
// stamp differs, or a kernel declined.
//
//export goLaneFinishPipeline
func goLaneFinishPipeline(comm C.uint64_t, stream C.int, seq, id, epoch C.uint64_t, round, waited C.int, started C.int64_t, send, recv unsafe.Pointer, count C.size_t, dt, op C.int, preMul C.double, root C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, ok := laneComm(comm)
	if !ok { // cannot happen: a lane is freed only once no op is in it
		return fail(nil, invalid("fast lane of communicator %d is gone", uint64(comm)))
	}
	d := reduce.DType(dt)
	n := int(count) * d.Size() // the lane runs the pipeline for large payloads only: n > 0
	h := pgbackend.LanePipelineHandover{
		LaneHandover: pgbackend.LaneHandover{
			Stream: int(stream), Seq: uint64(seq), ID: uint64(id), Epoch: uint64(epoch),
			Started: time.Duration(started), DType: d, Op: reduce.Op(op),
		},
		Round: int(round), Waited: waited != 0, Send: unsafe.Slice((*byte)(send), n), PreMul: float64(preMul),
		Root: int(root),
	}
	if recv != nil { // NULL off a reduce's root
		h.Recv = unsafe.Slice((*byte)(recv), n)
	}
	if err := e.c.FinishLanePipeline(h); err != nil {
		return fail(e, err)
	}
	return C.hcclGoSuccess
}

// goLaneFinishOp finishes an op other than all_reduce (kind, as
// pgbackend.LaneOp numbers them) that the C lane began and hands over
// (pgbackend.FinishLaneOp): its wait outlasted the spin, a peer's stamp
// differs, or a kernel declined. recv holds out bytes: a broadcast's
// payload, an all_gather's every block, a reduce_scatter's block (send then
// holds p blocks), a reduce's result on root (n bytes; recv NULL off root),
// none for a barrier; dt and op are -1 for the data movers. A
// broadcast, all_gather or reduce_scatter stopped at the chunk of offset
// off (of each block), waited or not; send is then read from there on
// (NULL off a broadcast's root).
//
//export goLaneFinishOp
func goLaneFinishOp(comm C.uint64_t, stream, kind C.int, seq, id, epoch C.uint64_t, started C.int64_t, send, recv unsafe.Pointer, out C.size_t, dt, op C.int, preMul C.double, root C.int, off C.longlong, waited C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, ok := laneComm(comm)
	if !ok { // cannot happen: a lane is freed only once no op is in it
		return fail(nil, invalid("fast lane of communicator %d is gone", uint64(comm)))
	}
	h := pgbackend.LaneOpHandover{
		LaneHandover: pgbackend.LaneHandover{
			Stream: int(stream), Seq: uint64(seq), ID: uint64(id), Epoch: uint64(epoch),
			Started: time.Duration(started), DType: reduce.DType(dt), Op: reduce.Op(op),
		},
		Kind: pgbackend.LaneOp(kind), Root: int(root), Bytes: int(out), PreMul: float64(preMul),
		Offset: int(off), Waited: waited != 0,
	}
	if out > 0 && recv != nil {
		h.Recv = unsafe.Slice((*byte)(recv), int(out))
	}
	var sendBytes int // the bytes of send, where the rest of the op reads it
	switch h.Kind {
	case pgbackend.LaneBroadcast:
		sendBytes = int(out)
	case pgbackend.LaneAllGather:
		sendBytes = int(out) / e.c.Size()
	case pgbackend.LaneReduceScatter:
		sendBytes = int(out) * e.c.Size()
	}
	if sendBytes > 0 && send != nil {
		h.Send = unsafe.Slice((*byte)(send), sendBytes)
	}
	if err := e.c.FinishLaneOp(h); err != nil {
		return fail(e, err)
	}
	return C.hcclGoSuccess
}

// goLanePlace notes that the C lane's wait on stream found local rank j
// on its CPU at epoch e (pgbackend.NoteLanePlace), which may move the
// calling thread off that CPU.
//
//export goLanePlace
func goLanePlace(comm C.uint64_t, stream, j C.int, epoch C.uint64_t) {
	if e, ok := laneComm(comm); ok {
		e.c.NoteLanePlace(int(stream), int(j), uint64(epoch))
	}
}

// goLaneKick starts what was queued on a stream while the C lane held it.
//
//export goLaneKick
func goLaneKick(comm C.uint64_t, stream C.int) {
	if e, ok := laneComm(comm); ok {
		e.c.KickStream(int(stream))
	}
}
