// Command export is the C ABI of hccl-go (include/hccl_go.h), built as the
// one shared library of the project:
//
//	go build -buildmode=c-shared -o libhccl_go.so ./export
//
// It only translates: C values to Go values, handles to objects, errors to
// result codes and messages. Everything else lives in pgbackend and below.
// hccl_go.c holds the public symbols; each enters through HCCL_GO_ENTER
// (use after fork, the count of calling threads, the calling thread's Go
// processor) and then calls the go* function of the same name in capi_*.go.
package main

import (
	"os"
	"runtime"
)

func init() {
	// An explicit HCCL_GO_MAXPROCS holds from the start; the automatic
	// policy waits for a communicator to know the local ranks (maxprocs.go).
	if n, err := explicitMaxProcs(os.Getenv(maxProcsVar)); err == nil && n > 0 {
		runtime.GOMAXPROCS(n)
	}
}

func main() {}
