package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/streams"
)

// issue runs one op on the communicator h and hands its work back through
// out, or, with out NULL, runs the op to completion before it returns
// (capi_blocking.go). Every collective entry point goes through it.
func issue(h C.hcclGoComm_t, out *C.hcclGoWork_t, op func(c *pgbackend.Communicator) (*streams.Work, error)) C.hcclGoResult_t {
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	w, err := op(e.c)
	return handOver(e, out, w, err)
}

// issueCall issues the collective that call makes. A blocking call (out
// NULL) first tries to run it at once on this thread (pgbackend.RunNow);
// when it may not, it is queued and run to completion as issue does.
func issueCall(h C.hcclGoComm_t, out *C.hcclGoWork_t, call func(c *pgbackend.Communicator) (pgbackend.Call, error)) C.hcclGoResult_t {
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	cl, err := call(e.c)
	if out == nil {
		if ran, err := e.c.RunNow(cl, err); ran {
			if err != nil {
				return fail(e, err)
			}
			return C.hcclGoSuccess
		}
	}
	w, err := e.c.Submit(cl, err)
	return handOver(e, out, w, err)
}

// handOver gives the caller the op just issued as w (err: it was not):
// its handle in out, or, with out NULL, its status once it completed.
func handOver(e *commEntry, out *C.hcclGoWork_t, w *streams.Work, err error) C.hcclGoResult_t {
	if err != nil {
		return fail(e, err)
	}
	if out == nil {
		return runToCompletion(e, w)
	}
	*out = C.hcclGoWork_t(works.put(&workEntry{w: w, comm: e}))
	return C.hcclGoSuccess
}

//export goAllReduce
func goAllReduce(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, op C.hcclGoRedOp_t, preMul C.double, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		s, err := cBuf("sendbuff", send, count, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBuf("recvbuff", recv, count, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.AllReduceCall(s, r, d, reduce.Op(op), float64(preMul), int(stream))
	})
}

//export goBroadcast
func goBroadcast(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, root C.int, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		s, err := cBufOptional("sendbuff", send, count, d, c.Rank() == int(root))
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBuf("recvbuff", recv, count, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.BroadcastCall(s, r, int(root), int(stream))
	})
}

//export goReduce
func goReduce(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, op C.hcclGoRedOp_t, preMul C.double, root C.int, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		s, err := cBuf("sendbuff", send, count, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBufOptional("recvbuff", recv, count, d, c.Rank() == int(root))
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.ReduceCall(s, r, d, reduce.Op(op), float64(preMul), int(root), int(stream))
	})
}

//export goAllGather
func goAllGather(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		s, err := cBuf("sendbuff", send, count, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBuf("recvbuff", recv, count*C.size_t(c.Size()), d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.AllGatherCall(s, r, int(stream))
	})
}

//export goAllGatherV
func goAllGatherV(send, recv unsafe.Pointer, counts *C.size_t, dt C.hcclGoDataType_t, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		d := reduce.DType(dt)
		if !d.Valid() {
			return nil, invalid("unsupported dtype %d", int32(dt))
		}
		cs, err := cSizes("recvcounts", counts, c.Size(), d.Size())
		if err != nil {
			return nil, err
		}
		s, err := cBuf("sendbuff", send, C.size_t(cs[c.Rank()]/d.Size()), d)
		if err != nil {
			return nil, err
		}
		r, err := cBuf("recvbuff", recv, C.size_t(sum(cs)/d.Size()), d)
		if err != nil {
			return nil, err
		}
		return c.AllGatherV(s, r, cs, int(stream))
	})
}

//export goReduceScatter
func goReduceScatter(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, op C.hcclGoRedOp_t, preMul C.double, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		s, err := cBuf("sendbuff", send, count*C.size_t(c.Size()), d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBuf("recvbuff", recv, count, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.ReduceScatterCall(s, r, d, reduce.Op(op), float64(preMul), int(stream))
	})
}

//export goReduceScatterV
func goReduceScatterV(send, recv unsafe.Pointer, counts *C.size_t, dt C.hcclGoDataType_t, op C.hcclGoRedOp_t, preMul C.double, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		d := reduce.DType(dt)
		cs, err := cSizes("recvcounts", counts, c.Size(), 1) // elements
		if err != nil {
			return nil, err
		}
		s, err := cBuf("sendbuff", send, C.size_t(sum(cs)), d)
		if err != nil {
			return nil, err
		}
		r, err := cBuf("recvbuff", recv, C.size_t(cs[c.Rank()]), d)
		if err != nil {
			return nil, err
		}
		return c.ReduceScatterV(s, r, cs, d, reduce.Op(op), float64(preMul), int(stream))
	})
}

//export goAllToAllV
func goAllToAllV(send unsafe.Pointer, sendCounts, sendDispls *C.size_t, recv unsafe.Pointer, recvCounts, recvDispls *C.size_t, dt C.hcclGoDataType_t, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		if !d.Valid() {
			return pgbackend.Call{}, invalid("unsupported dtype %d", int32(dt))
		}
		var arrays [4][]int
		for i, a := range []struct {
			name string
			p    *C.size_t
		}{{"sendcounts", sendCounts}, {"sdispls", sendDispls}, {"recvcounts", recvCounts}, {"rdispls", recvDispls}} {
			v, err := cSizes(a.name, a.p, c.Size(), d.Size())
			if err != nil {
				return pgbackend.Call{}, err
			}
			arrays[i] = v
		}
		s, err := cBuf("sendbuff", send, C.size_t(extent(arrays[0], arrays[1])/d.Size()), d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBuf("recvbuff", recv, C.size_t(extent(arrays[2], arrays[3])/d.Size()), d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.AllToAllVCall(s, arrays[0], arrays[1], r, arrays[2], arrays[3], int(stream))
	})
}

// extent is the number of bytes the (count, displacement) blocks span.
func extent(counts, displs []int) int {
	end := 0
	for i := range counts {
		end = max(end, displs[i]+counts[i])
	}
	return end
}

//export goAllToAll
func goAllToAll(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		d := reduce.DType(dt)
		n := count * C.size_t(c.Size())
		s, err := cBuf("sendbuff", send, n, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		r, err := cBuf("recvbuff", recv, n, d)
		if err != nil {
			return pgbackend.Call{}, err
		}
		return c.AllToAllCall(s, r, int(stream))
	})
}

//export goGather
func goGather(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, root C.int, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		d := reduce.DType(dt)
		s, err := cBuf("sendbuff", send, count, d)
		if err != nil {
			return nil, err
		}
		r, err := cBufOptional("recvbuff", recv, count*C.size_t(c.Size()), d, c.Rank() == int(root))
		if err != nil {
			return nil, err
		}
		return c.Gather(s, r, int(root), int(stream))
	})
}

//export goScatter
func goScatter(send, recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, root C.int, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		d := reduce.DType(dt)
		s, err := cBufOptional("sendbuff", send, count*C.size_t(c.Size()), d, c.Rank() == int(root))
		if err != nil {
			return nil, err
		}
		r, err := cBuf("recvbuff", recv, count, d)
		if err != nil {
			return nil, err
		}
		return c.Scatter(s, r, int(root), int(stream))
	})
}

//export goBarrier
func goBarrier(h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issueCall(h, out, func(c *pgbackend.Communicator) (pgbackend.Call, error) {
		return c.BarrierCall(int(stream))
	})
}

//export goSend
func goSend(send unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, peer C.int, tag C.uint32_t, h C.hcclGoComm_t, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		s, err := cBuf("sendbuff", send, count, reduce.DType(dt))
		if err != nil {
			return nil, err
		}
		return c.Send(s, int(peer), uint32(tag))
	})
}

//export goRecv
func goRecv(recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, peer C.int, tag C.uint32_t, h C.hcclGoComm_t, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		r, err := cBuf("recvbuff", recv, count, reduce.DType(dt))
		if err != nil {
			return nil, err
		}
		return c.Recv(r, int(peer), uint32(tag))
	})
}

//export goRecvAny
func goRecvAny(recv unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, tag C.uint32_t, source *C.int, h C.hcclGoComm_t, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		if source == nil {
			return nil, invalid("recv from any rank: source is NULL")
		}
		r, err := cBuf("recvbuff", recv, count, reduce.DType(dt))
		if err != nil {
			return nil, err
		}
		return c.RecvAny(r, uint32(tag), func(rank int) { *source = C.int(rank) })
	})
}
