package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"fmt"

	"github.com/hccl-go/hccl-go/topo"
)

// The topology simulator through the C ABI (for python -m
// torch_hccl_go.topo simulate): the cost model over a synthetic cluster or
// a topology file, no communicator needed.

//export goTopoSimulate
func goTopoSimulate(args *C.char, out *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if args == nil || out == nil || length == 0 {
		return fail(nil, invalid("hcclGoTopoSimulate: argsJson and out must not be NULL or empty"))
	}
	res, err := topo.SimulateJSON(C.GoString(args))
	if err != nil {
		return fail(nil, fmt.Errorf("hcclGoTopoSimulate: %w", invalid("%v", err)))
	}
	if int(length) <= len(res) {
		return fail(nil, invalid("hcclGoTopoSimulate: out of %d bytes is too small: need %d bytes", int(length), len(res)+1))
	}
	copyOut(out, length, res)
	return C.hcclGoSuccess
}
