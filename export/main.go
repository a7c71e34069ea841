// Command export is the C ABI of hccl-go (include/hccl_go.h), built as the
// one shared library of the project:
//
//	go build -buildmode=c-shared -o libhccl_go.so ./export
//
// It only translates: C values to Go values, handles to objects, errors to
// result codes and messages. Everything else lives in pgbackend and below.
// hccl_go.c holds the public symbols; each checks for use after fork and then
// calls the go* function of the same name in capi.go.
package main

import (
	"os"
	"runtime"
	"strconv"
)

func init() {
	// The library shares its host process with PyTorch's compute threads.
	// By default Go may run on every core (communication goroutines mostly
	// block in system calls or wait on memory); HCCL_GO_MAXPROCS caps it.
	if v, err := strconv.Atoi(os.Getenv("HCCL_GO_MAXPROCS")); err == nil && v > 0 {
		runtime.GOMAXPROCS(v)
	}
}

func main() {}
