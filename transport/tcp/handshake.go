package tcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Connection handshake, version 1. The acceptor speaks first, so a dialer
// proves the job secret against a fresh nonce and a recorded handshake cannot
// be replayed; the acceptor then proves it too, against the dialer's nonce.
//
//	acceptor -> dialer   challenge: magic, version, kind, nonceA
//	dialer   -> acceptor hello:     magic, version, kind, rank, size, stream,
//	                                streams, maxFrame, nonceD,
//	                                HMAC(secret, "dial" | nonceA | fields | nonceD)
//	acceptor -> dialer   welcome:   magic, version, kind, status, rank,
//	                                maxFrame, HMAC(secret, "accept" | nonceD | nonceA | fields)
//
// The secret itself never crosses the wire. Every message starts with an
// 8-byte prefix (magic, version, kind) so that a peer speaking another
// version is told so instead of misparsed.
const (
	protoVersion = 1
	nonceSize    = 32
	macSize      = sha256.Size

	prefixSize    = 8
	challengeSize = prefixSize + nonceSize                               // 40
	helloSize     = prefixSize + 4 + 4 + 2 + 2 + 4 + nonceSize + macSize // 88
	welcomeSize   = prefixSize + 2 + 2 + 4 + 4 + macSize                 // 52
)

var magic = [4]byte{'H', 'C', 'G', 'T'}

const (
	kindChallenge = 1
	kindHello     = 2
	kindWelcome   = 3
)

// Welcome status codes: why an acceptor refused a dialer.
const (
	statusOK         = 0
	statusBadVersion = 1
	statusBadAuth    = 2
	statusBadPeer    = 3 // rank, size, stream or stream count do not fit
	statusDuplicate  = 4
)

var (
	errBadHandshake = errors.New("malformed handshake message")
	errBadMagic     = errors.New("not an hccl-go connection (bad magic)")
	errBadVersion   = errors.New("unsupported protocol version")
	errBadAuth      = errors.New("job secret not proven")
)

// ErrBadSecret marks a connection set-up that failed because this rank and
// a peer hold different job secrets.
var ErrBadSecret = errors.New("the ranks were given different job secrets")

func statusText(s uint16) string {
	switch s {
	case statusOK:
		return "ok"
	case statusBadVersion:
		return "protocol version refused"
	case statusBadAuth:
		return "job secret refused"
	case statusBadPeer:
		return "rank, size or stream count refused"
	case statusDuplicate:
		return "duplicate connection"
	}
	return fmt.Sprintf("status %d", s)
}

// hello is the dialer's introduction.
type hello struct {
	Rank     uint32
	Size     uint32
	Stream   uint16
	Streams  uint16
	MaxFrame uint32
	Nonce    [nonceSize]byte
	MAC      [macSize]byte
}

// welcome is the acceptor's answer.
type welcome struct {
	Status   uint16
	Rank     uint32
	MaxFrame uint32
	MAC      [macSize]byte
}

func putPrefix(b []byte, kind uint16) {
	copy(b, magic[:])
	binary.LittleEndian.PutUint16(b[4:], protoVersion)
	binary.LittleEndian.PutUint16(b[6:], kind)
}

// checkPrefix validates the first prefixSize bytes of a handshake message.
// A wrong version is reported as errBadVersion so the acceptor can say so.
func checkPrefix(b []byte, kind uint16) error {
	if len(b) < prefixSize {
		return fmt.Errorf("%w: %d-byte prefix", errBadHandshake, len(b))
	}
	if [4]byte(b[:4]) != magic {
		return errBadMagic
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != protoVersion {
		return fmt.Errorf("%w: %d (this build speaks %d)", errBadVersion, v, protoVersion)
	}
	if k := binary.LittleEndian.Uint16(b[6:]); k != kind {
		return fmt.Errorf("%w: message kind %d, want %d", errBadHandshake, k, kind)
	}
	return nil
}

func encodeChallenge(nonce [nonceSize]byte) []byte {
	b := make([]byte, challengeSize)
	putPrefix(b, kindChallenge)
	copy(b[prefixSize:], nonce[:])
	return b
}

func decodeChallenge(b []byte) ([nonceSize]byte, error) {
	var nonce [nonceSize]byte
	if err := checkPrefix(b, kindChallenge); err != nil {
		return nonce, err
	}
	if len(b) != challengeSize {
		return nonce, fmt.Errorf("%w: challenge of %d bytes", errBadHandshake, len(b))
	}
	copy(nonce[:], b[prefixSize:])
	return nonce, nil
}

// helloFields is the part of a hello covered by its MAC (all but the MAC).
func helloFields(b []byte, h *hello) []byte {
	putPrefix(b, kindHello)
	p := b[prefixSize:]
	binary.LittleEndian.PutUint32(p[0:], h.Rank)
	binary.LittleEndian.PutUint32(p[4:], h.Size)
	binary.LittleEndian.PutUint16(p[8:], h.Stream)
	binary.LittleEndian.PutUint16(p[10:], h.Streams)
	binary.LittleEndian.PutUint32(p[12:], h.MaxFrame)
	copy(p[16:], h.Nonce[:])
	return b[:helloSize-macSize]
}

func encodeHello(h hello) []byte {
	b := make([]byte, helloSize)
	helloFields(b, &h)
	copy(b[helloSize-macSize:], h.MAC[:])
	return b
}

func decodeHello(b []byte) (hello, error) {
	var h hello
	if err := checkPrefix(b, kindHello); err != nil {
		return h, err
	}
	if len(b) != helloSize {
		return h, fmt.Errorf("%w: hello of %d bytes", errBadHandshake, len(b))
	}
	p := b[prefixSize:]
	h.Rank = binary.LittleEndian.Uint32(p[0:])
	h.Size = binary.LittleEndian.Uint32(p[4:])
	h.Stream = binary.LittleEndian.Uint16(p[8:])
	h.Streams = binary.LittleEndian.Uint16(p[10:])
	h.MaxFrame = binary.LittleEndian.Uint32(p[12:])
	copy(h.Nonce[:], p[16:])
	copy(h.MAC[:], b[helloSize-macSize:])
	return h, nil
}

// helloMAC is the dialer's proof of the secret, bound to the acceptor's nonce
// and to every field of the hello.
func helloMAC(secret []byte, challenge [nonceSize]byte, h *hello) [macSize]byte {
	var fields [helloSize]byte
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("hccl-go/tcp dial"))
	m.Write(challenge[:])
	m.Write(helloFields(fields[:], h))
	var out [macSize]byte
	m.Sum(out[:0])
	return out
}

// verifyHello reports whether h carries a valid proof for challenge.
func verifyHello(secret []byte, challenge [nonceSize]byte, h *hello) bool {
	want := helloMAC(secret, challenge, h)
	return hmac.Equal(want[:], h.MAC[:])
}

func welcomeFields(b []byte, w *welcome) []byte {
	putPrefix(b, kindWelcome)
	p := b[prefixSize:]
	binary.LittleEndian.PutUint16(p[0:], w.Status)
	binary.LittleEndian.PutUint16(p[2:], 0)
	binary.LittleEndian.PutUint32(p[4:], w.Rank)
	binary.LittleEndian.PutUint32(p[8:], w.MaxFrame)
	return b[:welcomeSize-macSize]
}

func encodeWelcome(w welcome) []byte {
	b := make([]byte, welcomeSize)
	welcomeFields(b, &w)
	copy(b[welcomeSize-macSize:], w.MAC[:])
	return b
}

func decodeWelcome(b []byte) (welcome, error) {
	var w welcome
	if err := checkPrefix(b, kindWelcome); err != nil {
		return w, err
	}
	if len(b) != welcomeSize {
		return w, fmt.Errorf("%w: welcome of %d bytes", errBadHandshake, len(b))
	}
	p := b[prefixSize:]
	w.Status = binary.LittleEndian.Uint16(p[0:])
	if binary.LittleEndian.Uint16(p[2:]) != 0 {
		return w, fmt.Errorf("%w: nonzero reserved bits", errBadHandshake)
	}
	w.Rank = binary.LittleEndian.Uint32(p[4:])
	w.MaxFrame = binary.LittleEndian.Uint32(p[8:])
	copy(w.MAC[:], b[welcomeSize-macSize:])
	return w, nil
}

// welcomeMAC is the acceptor's proof, bound to both nonces and to the hello
// it answers, so it cannot be replayed to another dialer or connection.
func welcomeMAC(secret []byte, h *hello, challenge [nonceSize]byte, w *welcome) [macSize]byte {
	var fields [welcomeSize]byte
	var hf [helloSize]byte
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("hccl-go/tcp accept"))
	m.Write(challenge[:])
	m.Write(helloFields(hf[:], h))
	m.Write(welcomeFields(fields[:], w))
	var out [macSize]byte
	m.Sum(out[:0])
	return out
}

func verifyWelcome(secret []byte, h *hello, challenge [nonceSize]byte, w *welcome) bool {
	want := welcomeMAC(secret, h, challenge, w)
	return hmac.Equal(want[:], w.MAC[:])
}
