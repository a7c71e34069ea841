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

// Sparse all_reduce and traffic counters through the C ABI (wire
// compression itself is a communicator option: no entry point).

//export goSparseAllReduce
func goSparseAllReduce(indices *C.int64_t, values unsafe.Pointer, nnz C.size_t, dt C.hcclGoDataType_t, dense unsafe.Pointer, denseCount C.size_t, h C.hcclGoComm_t, stream C.int, out *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return issue(h, out, func(c *pgbackend.Communicator) (*streams.Work, error) {
		d := reduce.DType(dt)
		vals, err := cBuf("values", values, nnz, d)
		if err != nil {
			return nil, err
		}
		idxBytes, err := cBuf("indices", unsafe.Pointer(indices), nnz, reduce.Int64)
		if err != nil {
			return nil, err
		}
		var idx []int64
		if len(idxBytes) > 0 {
			idx = unsafe.Slice((*int64)(unsafe.Pointer(indices)), len(idxBytes)/8)
		}
		res, err := cBuf("denseOut", dense, denseCount, d)
		if err != nil {
			return nil, err
		}
		return c.SparseAllReduce(idx, vals, d, res, int(stream))
	})
}

//export goCommStats
func goCommStats(h C.hcclGoComm_t, buf *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if buf == nil || length == 0 {
		return fail(e, invalid("hcclGoCommStats: buf is NULL or empty"))
	}
	s := e.c.StatsJSON()
	copyOut(buf, length, s)
	if len(s) >= int(length) {
		return fail(e, invalid("hcclGoCommStats: the JSON needs %d bytes, buf has %d", len(s)+1, int(length)))
	}
	return C.hcclGoSuccess
}
