package cma

import "errors"

// ErrUnsupported is returned where this build does not know the system
// calls (not Linux, or an architecture without their numbers here).
var ErrUnsupported = errors.New("cross-memory attach not supported on this platform")
