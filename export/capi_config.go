package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"encoding/json"

	"github.com/hccl-go/hccl-go/pgbackend"
)

//export goGetConfig
func goGetConfig(buf *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	type setting struct {
		Env     string `json:"env"`
		Default string `json:"default"`
		Doc     string `json:"doc"`
	}
	out := make([]setting, len(pgbackend.Vars))
	for i, v := range pgbackend.Vars {
		out[i] = setting{v.Env, v.Default, v.Doc}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fail(nil, err)
	}
	if buf == nil || int(length) <= len(b) {
		return fail(nil, invalid("hcclGoGetConfig: buffer of %d bytes is too small for %d", int(length), len(b)+1))
	}
	copyOut(buf, length, string(b))
	return C.hcclGoSuccess
}
