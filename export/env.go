package main

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// cGetenv reads a variable from the C library's environment, which is the
// live one in a host process: Python's os.environ writes it, while Go's
// os.Getenv only sees a copy taken when the runtime started.
func cGetenv(name string) (string, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.getenv(cs)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
