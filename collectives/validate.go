package collectives

import (
	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
)

// Argument checks of the message collectives beyond those every hop shares
// (collectives/internal/args). Each returns an error wrapping
// ErrInvalidArgument that names the offending argument.

func checkEndpoint(ep transport.Endpoint) error {
	if ep == nil {
		return args.Invalidf("nil endpoint")
	}
	if ep.Size() < 1 || ep.Rank() < 0 || ep.Rank() >= ep.Size() {
		return args.Invalidf("endpoint rank %d outside world of size %d", ep.Rank(), ep.Size())
	}
	return nil
}

// rankOf is the endpoint's rank for error messages, -1 for a nil endpoint.
func rankOf(ep transport.Endpoint) int {
	if ep == nil {
		return -1
	}
	return ep.Rank()
}
