package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/streams"
)

// A collective called with a NULL work pointer blocks: the call runs the op
// to completion on the calling thread and returns its status. For callers
// that would wait at once anyway (c10d's synchronous ops): one C->Go call
// instead of four (issue, set callback, wait, free), and no handle, no
// callback and no completion hand-off.

// blockingMargin is how long past the communicator's op timeout a blocking
// call waits: the op fails itself at its timeout (naming the late ranks),
// and that report is worth a moment's wait.
const blockingMargin = 2 * time.Second

// runToCompletion runs w, just issued on e, on this thread when it is next
// on its stream (else it waits for the ops before it) and returns its
// status.
//
// Its buffers are the caller's, who may free them once this returns, so it
// must not return while the op may still touch them. An op that outlives
// its own timeout by blockingMargin (one stuck behind a stuck op) is
// therefore ended by aborting the communicator, which fails every op at
// once, and the call returns only when the op has ended.
func runToCompletion(e *commEntry, w *streams.Work) C.hcclGoResult_t {
	w.RunInline()
	timeout := e.c.Config().Timeout
	if timeout > 0 {
		timeout += blockingMargin
	}
	err := w.Wait(context.Background(), timeout)
	if errors.Is(err, streams.ErrTimeout) {
		e.c.Abort()
		if werr := w.Wait(context.Background(), blockingMargin); errors.Is(werr, streams.ErrTimeout) {
			// Never seen: an aborted communicator fails its ops in
			// milliseconds. Waiting on without limit beats returning
			// while the op may still write the caller's buffer.
			_ = w.Wait(context.Background(), 0)
		}
		err = fmt.Errorf("%w; the communicator was aborted to end it", err)
	}
	if err != nil {
		return fail(e, err)
	}
	return C.hcclGoSuccess
}
