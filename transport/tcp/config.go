package tcp

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes Connect. The zero value is valid except for Secret, which
// should be set (an empty secret authenticates nothing; fine for tests).
type Config struct {
	// Secret is the per-job secret both ends prove knowledge of during the
	// handshake. It is never sent over the wire.
	Secret []byte
	// StreamsPerPeer is the number of TCP connections to each peer (default
	// 1). Large messages are striped across them; order per (peer, tag) is
	// kept. All ranks must use the same value.
	StreamsPerPeer int
	// ConnectTimeout bounds the whole connection setup (default 2 minutes).
	ConnectTimeout time.Duration
	// UnreachableTimeout bounds how long a peer's advertised address may
	// fail to take a TCP connection (refused, unreachable, no answer) before
	// Connect gives up with an error wrapping ErrUnreachable (default 5 s,
	// at most ConnectTimeout). A peer's listener is open before its address
	// is published, so such failures are not a slow start; a peer that
	// takes connections but calls Connect late is waited for up to
	// ConnectTimeout.
	UnreachableTimeout time.Duration
	// HandshakeTimeout bounds each read and write of an accepted connection's
	// handshake, so a silent stranger cannot hold a slot (default 10 s).
	HandshakeTimeout time.Duration
	// MaxFrameBytes bounds the body of any single frame this endpoint accepts
	// and sends (default 4 MiB). Larger messages are cut into frames; frames
	// of different messages interleave, so it is also the granularity at which
	// a small message can overtake a large one on the same link.
	MaxFrameBytes int
	// Logf, if not nil, receives a line for each refused connection and each
	// failed link. It may be called from any goroutine.
	Logf func(format string, args ...any)
	// Unlinked, if not nil, marks the ranks this one has no link to
	// (Unlinked[p]): another transport carries them, such as shared memory
	// for the ranks of this host. Both ends of a pair must agree; a rank
	// refuses connections from the ranks it marks, and Send or Recv with
	// one of them fails.
	Unlinked []bool
	// Lazy makes each link on its first use instead of in Connect (see
	// lazy.go): Connect returns at once, the listener stays open until
	// Close, and a Send to a peer without a link makes it. Both ends of a
	// pair must agree.
	Lazy bool
	// Advice, if not nil, gives what a lazy link's failure appends to its
	// error: what the user may set (Connect's caller adds its own).
	Advice func(err error) string
}

const (
	defaultConnectTimeout   = 2 * time.Minute
	defaultUnreachable      = 5 * time.Second
	defaultHandshakeTimeout = 10 * time.Second
	defaultMaxFrameBytes    = 4 << 20
	// maxStreamsPerPeer keeps the connection count sane.
	maxStreamsPerPeer = 64
	// minFrameBytes keeps frames large enough to be efficient.
	minFrameBytes = 4 << 10
	// maxFrameBytesLimit is what a 32-bit frame length can say, rounded down.
	maxFrameBytesLimit = 1 << 30
)

var errConfig = errors.New("invalid tcp config")

// withDefaults returns cfg with zero fields set to their defaults, or an
// error for values out of range.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.StreamsPerPeer == 0 {
		cfg.StreamsPerPeer = 1
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if cfg.UnreachableTimeout == 0 {
		cfg.UnreachableTimeout = defaultUnreachable
	}
	cfg.UnreachableTimeout = min(cfg.UnreachableTimeout, cfg.ConnectTimeout)
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = defaultHandshakeTimeout
	}
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = defaultMaxFrameBytes
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	switch {
	case cfg.StreamsPerPeer < 1 || cfg.StreamsPerPeer > maxStreamsPerPeer:
		return cfg, fmt.Errorf("%w: StreamsPerPeer %d not in [1, %d]", errConfig, cfg.StreamsPerPeer, maxStreamsPerPeer)
	case cfg.MaxFrameBytes < minFrameBytes || cfg.MaxFrameBytes > maxFrameBytesLimit:
		return cfg, fmt.Errorf("%w: MaxFrameBytes %d not in [%d, %d]", errConfig, cfg.MaxFrameBytes, minFrameBytes, maxFrameBytesLimit)
	case cfg.ConnectTimeout < 0 || cfg.HandshakeTimeout < 0 || cfg.UnreachableTimeout < 0:
		return cfg, fmt.Errorf("%w: negative timeout", errConfig)
	}
	return cfg, nil
}
