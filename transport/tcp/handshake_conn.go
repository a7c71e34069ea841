package tcp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// acceptedPeer is what a successful acceptor handshake learned.
type acceptedPeer struct {
	rank, stream, maxFrame int
}

// errHandshakeRefused marks a dialer that the acceptor turned away; the
// cause says why.
var errHandshakeRefused = errors.New("handshake refused")

// errProbe marks an accepted connection closed before it said anything:
// a peer's reachability probe (reach.go), or a port scanner. It is closed
// without a log line.
var errProbe = errors.New("closed before the hello (a reachability probe)")

// closedSilently reports whether a connection ended, with n bytes of the
// hello read, the way a probe ends it: closed (or reset, when the challenge
// reached a closed socket) before sending a byte.
func closedSilently(n int, err error) bool {
	return n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// acceptHandshake runs the acceptor's side on a fresh connection: challenge,
// check the hello, reserve the link slot, welcome. Every read and write has a
// deadline. On error the caller closes conn.
func (s *setup) acceptHandshake(conn net.Conn) (acceptedPeer, error) {
	var none acceptedPeer
	if err := conn.SetDeadline(s.handshakeDeadline()); err != nil {
		return none, fmt.Errorf("set deadline: %w", err)
	}
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return none, fmt.Errorf("nonce: %w", err)
	}
	if _, err := conn.Write(encodeChallenge(nonce)); err != nil {
		if closedSilently(0, err) {
			return none, errProbe
		}
		return none, fmt.Errorf("write challenge: %w", err)
	}

	buf := make([]byte, helloSize)
	if n, err := io.ReadFull(conn, buf[:prefixSize]); err != nil {
		if closedSilently(n, err) {
			return none, errProbe
		}
		return none, fmt.Errorf("read hello: %w", err)
	}
	if err := checkPrefix(buf[:prefixSize], kindHello); err != nil {
		if errors.Is(err, errBadVersion) {
			s.refuse(conn, statusBadVersion)
		}
		return none, err
	}
	if _, err := io.ReadFull(conn, buf[prefixSize:]); err != nil {
		return none, fmt.Errorf("read hello: %w", err)
	}
	h, err := decodeHello(buf)
	if err != nil {
		return none, err
	}
	if !verifyHello(s.cfg.Secret, nonce, &h) {
		s.refuse(conn, statusBadAuth)
		s.noteBadSecret(int(h.Rank), conn.RemoteAddr().String())
		return none, fmt.Errorf("%w (claimed rank %d)", errBadAuth, h.Rank)
	}

	w := welcome{Status: statusOK, Rank: uint32(s.rank), MaxFrame: uint32(s.cfg.MaxFrameBytes)}
	peer, stream := int(h.Rank), int(h.Stream)
	doorbell := stream == doorbellStream
	var refusal error
	switch {
	case doorbell && (s.onDoorbell == nil || int(h.Size) != s.size || peer >= s.rank || !s.linked(peer)):
		// Only lower ranks with a link to make ring, and only lazy links
		// answer.
		refusal = fmt.Errorf("rank %d of %d may not ask rank %d of %d to dial it", h.Rank, h.Size, s.rank, s.size)
		w.Status = statusBadPeer
	case doorbell:
	case int(h.Size) != s.size || peer <= s.rank || peer >= s.size:
		// Only higher ranks dial this one.
		refusal = fmt.Errorf("rank %d of %d may not dial rank %d of %d", h.Rank, h.Size, s.rank, s.size)
		w.Status = statusBadPeer
	case !s.linked(peer):
		refusal = fmt.Errorf("rank %d dialed, but this rank has no TCP link to it (another transport carries it)", peer)
		w.Status = statusBadPeer
	case int(h.Streams) != s.cfg.StreamsPerPeer || stream >= s.cfg.StreamsPerPeer:
		refusal = fmt.Errorf("rank %d: stream %d of %d, this rank uses %d streams per peer", peer, stream, h.Streams, s.cfg.StreamsPerPeer)
		w.Status = statusBadPeer
	case h.MaxFrame < minFrameBytes:
		refusal = fmt.Errorf("rank %d: max frame %d below %d", peer, h.MaxFrame, minFrameBytes)
		w.Status = statusBadPeer
	case !s.reserve(peer, stream):
		refusal = fmt.Errorf("rank %d stream %d: duplicate connection", peer, stream)
		w.Status = statusDuplicate
	}
	w.MAC = welcomeMAC(s.cfg.Secret, &h, nonce, &w)
	if _, err := conn.Write(encodeWelcome(w)); err != nil {
		if refusal == nil && !doorbell {
			s.unreserve(peer, stream)
		}
		return none, fmt.Errorf("rank %d: write welcome: %w", peer, err)
	}
	if refusal != nil {
		return none, refusal
	}
	if doorbell {
		return acceptedPeer{rank: peer, stream: stream}, nil
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		s.unreserve(peer, stream)
		return none, fmt.Errorf("clear deadline: %w", err)
	}
	return acceptedPeer{rank: peer, stream: stream, maxFrame: int(h.MaxFrame)}, nil
}

// refuse tells a dialer why it is turned away, best effort: the connection
// is closed right after.
func (s *setup) refuse(conn net.Conn, status uint16) {
	_, _ = conn.Write(encodeWelcome(welcome{Status: status}))
}

// dialHandshake runs the dialer's side for link (peer, stream) on conn. It
// returns the peer's max frame size. An error wrapping errHandshakeRefused or
// errBadAuth is final: retrying cannot help.
func (s *setup) dialHandshake(ctx context.Context, conn net.Conn, peer, stream int) (int, error) {
	// The peer may call Connect late: wait for its challenge as long as the
	// whole setup may take, and stop early if the setup is abandoned.
	if err := conn.SetDeadline(s.deadline); err != nil {
		return 0, fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	buf := make([]byte, helloSize)
	if _, err := io.ReadFull(conn, buf[:challengeSize]); err != nil {
		return 0, fmt.Errorf("read challenge: %w", err)
	}
	nonce, err := decodeChallenge(buf[:challengeSize])
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errHandshakeRefused, err)
	}
	h := hello{
		Rank:     uint32(s.rank),
		Size:     uint32(s.size),
		Stream:   uint16(stream),
		Streams:  uint16(s.cfg.StreamsPerPeer),
		MaxFrame: uint32(s.cfg.MaxFrameBytes),
	}
	if _, err := rand.Read(h.Nonce[:]); err != nil {
		return 0, fmt.Errorf("nonce: %w", err)
	}
	h.MAC = helloMAC(s.cfg.Secret, nonce, &h)
	if _, err := conn.Write(encodeHello(h)); err != nil {
		return 0, fmt.Errorf("write hello: %w", err)
	}

	if _, err := io.ReadFull(conn, buf[:welcomeSize]); err != nil {
		return 0, fmt.Errorf("read welcome: %w", err)
	}
	w, err := decodeWelcome(buf[:welcomeSize])
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errHandshakeRefused, err)
	}
	if w.Status != statusOK {
		if w.Status == statusBadAuth {
			return 0, fmt.Errorf("%w by rank %d: %s: %w", errHandshakeRefused, peer, statusText(w.Status), ErrBadSecret)
		}
		return 0, fmt.Errorf("%w by rank %d: %s", errHandshakeRefused, peer, statusText(w.Status))
	}
	if !verifyWelcome(s.cfg.Secret, &h, nonce, &w) || int(w.Rank) != peer {
		return 0, fmt.Errorf("%w by the listener at rank %d's address", errBadAuth, peer)
	}
	if w.MaxFrame < minFrameBytes {
		return 0, fmt.Errorf("%w: rank %d max frame %d below %d", errHandshakeRefused, peer, w.MaxFrame, minFrameBytes)
	}
	if !stop() {
		return 0, fmt.Errorf("setup abandoned: %w", context.Cause(ctx))
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return 0, fmt.Errorf("clear deadline: %w", err)
	}
	return int(w.MaxFrame), nil
}
