package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"fmt"

	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/streams"
)

// Streams and events through the C ABI: the stream count, events recorded
// on a stream (Communicator.Record) and cross-stream waits
// (Communicator.WaitFor), as CUDA's cudaEventRecord / cudaStreamWaitEvent.

//export goCommNumStreams
func goCommNumStreams(h C.hcclGoComm_t, n *C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if n == nil {
		return fail(e, invalid("hcclGoCommNumStreams: n is NULL"))
	}
	*n = C.int(e.c.NumStreams())
	return C.hcclGoSuccess
}

//export goEventRecord
func goEventRecord(h C.hcclGoComm_t, stream C.int, event *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if event == nil {
		return failComm(h, invalid("hcclGoEventRecord: event is NULL"))
	}
	return issue(h, event, func(c *pgbackend.Communicator) (*streams.Work, error) {
		w, err := c.Record(int(stream))
		if err != nil {
			return nil, fmt.Errorf("hcclGoEventRecord: %w", err)
		}
		return w, nil
	})
}

//export goStreamWaitWork
func goStreamWaitWork(h C.hcclGoComm_t, stream C.int, work C.hcclGoWork_t, marker *C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if marker == nil {
		return failComm(h, invalid("hcclGoStreamWaitWork: marker is NULL"))
	}
	return issue(h, marker, func(c *pgbackend.Communicator) (*streams.Work, error) {
		awaited, err := lookupWork(work)
		if err != nil {
			return nil, fmt.Errorf("hcclGoStreamWaitWork: %w", err)
		}
		w, err := c.WaitFor(int(stream), awaited.w)
		if err != nil {
			return nil, fmt.Errorf("hcclGoStreamWaitWork: %w", err)
		}
		return w, nil
	})
}

// failComm records err on comm h when h is valid (else globally).
func failComm(h C.hcclGoComm_t, err error) C.hcclGoResult_t {
	e, lerr := lookupComm(h)
	if lerr != nil {
		return fail(nil, lerr)
	}
	return fail(e, err)
}
