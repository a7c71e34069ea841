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
// torch_hccl_go.topo simulate and scale): the cost model over a synthetic
// cluster or a topology file, and the scale model, no communicator needed.

//export goTopoSimulate
func goTopoSimulate(args *C.char, out *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return topoJSON("hcclGoTopoSimulate", topo.SimulateJSON, args, out, length)
}

//export goTopoScale
func goTopoScale(args *C.char, out *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	return topoJSON("hcclGoTopoScale", topo.ScaleJSON, args, out, length)
}

// topoJSON answers a JSON request with model's JSON in out.
func topoJSON(name string, model func(string) (string, error), args *C.char, out *C.char, length C.size_t) C.hcclGoResult_t {
	if args == nil || out == nil || length == 0 {
		return fail(nil, invalid("%s: argsJson and out must not be NULL or empty", name))
	}
	res, err := model(C.GoString(args))
	if err != nil {
		return fail(nil, fmt.Errorf("%s: %w", name, invalid("%v", err)))
	}
	if int(length) <= len(res) {
		return fail(nil, invalid("%s: out of %d bytes is too small: need %d bytes", name, int(length), len(res)+1))
	}
	copyOut(out, length, res)
	return C.hcclGoSuccess
}
