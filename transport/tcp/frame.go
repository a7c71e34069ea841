package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
)

// A message travels as one or more frames. Its first frame (kind frameStart)
// always goes on stream 0 of the link, so that messages are announced to the
// receiver in the order they were sent; the other frames (frameData) carry
// later parts of the body on any stream and may interleave with frames of
// other messages. Every frame names its message by a per-link sequence number
// and its place by a byte offset, so the receiver can land bytes directly in
// the final buffer whatever the arrival order across streams.
//
// Header layout (little endian, headerSize bytes):
//
//	0   kind     u8
//	1   flags    u8   (0)
//	2   reserved u16  (0)
//	4   fragLen  u32  body bytes that follow this header
//	8   tag      u64
//	16  seq      u64  message sequence number on this link
//	24  msgLen   u64  length of the whole message
//	32  offset   u64  where this frame's body goes in the message
const headerSize = 40

const (
	frameStart = 1
	frameData  = 2
	// frameBye says the sender is closing its endpoint on purpose: the
	// receiver reports an orderly close rather than a reset. All its other
	// fields are zero.
	frameBye = 3
)

// maxMessageBytes bounds the length a header may announce, so that a corrupt
// header is refused rather than turned into a huge allocation.
const maxMessageBytes = 1 << 40

// frameHeader is one decoded frame header.
type frameHeader struct {
	Kind    uint8
	FragLen uint32
	Tag     transport.Tag
	Seq     uint64
	MsgLen  uint64
	Offset  uint64
}

var errBadFrame = errors.New("malformed frame header")

// encodeHeader writes h into b, which must hold headerSize bytes.
func encodeHeader(b []byte, h frameHeader) {
	_ = b[headerSize-1]
	b[0] = h.Kind
	b[1] = 0
	binary.LittleEndian.PutUint16(b[2:], 0)
	binary.LittleEndian.PutUint32(b[4:], h.FragLen)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.Tag))
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], h.MsgLen)
	binary.LittleEndian.PutUint64(b[32:], h.Offset)
}

// decodeHeader parses and validates a frame header. maxFrame bounds the body
// of one frame. Anything inconsistent is an error wrapping errBadFrame.
func decodeHeader(b []byte, maxFrame int) (frameHeader, error) {
	if len(b) < headerSize {
		return frameHeader{}, fmt.Errorf("%w: %d bytes, want %d", errBadFrame, len(b), headerSize)
	}
	h := frameHeader{
		Kind:    b[0],
		FragLen: binary.LittleEndian.Uint32(b[4:]),
		Tag:     transport.Tag(binary.LittleEndian.Uint64(b[8:])),
		Seq:     binary.LittleEndian.Uint64(b[16:]),
		MsgLen:  binary.LittleEndian.Uint64(b[24:]),
		Offset:  binary.LittleEndian.Uint64(b[32:]),
	}
	if b[1] != 0 || binary.LittleEndian.Uint16(b[2:]) != 0 {
		return frameHeader{}, fmt.Errorf("%w: nonzero flags or reserved bits", errBadFrame)
	}
	if int64(h.FragLen) > int64(maxFrame) {
		return frameHeader{}, fmt.Errorf("%w: frame of %d bytes exceeds the bound %d", errBadFrame, h.FragLen, maxFrame)
	}
	if h.MsgLen > maxMessageBytes {
		return frameHeader{}, fmt.Errorf("%w: message of %d bytes exceeds the bound %d", errBadFrame, h.MsgLen, uint64(maxMessageBytes))
	}
	if h.Offset > h.MsgLen || uint64(h.FragLen) > h.MsgLen-h.Offset {
		return frameHeader{}, fmt.Errorf("%w: bytes [%d, +%d) outside a %d-byte message", errBadFrame, h.Offset, h.FragLen, h.MsgLen)
	}
	switch h.Kind {
	case frameStart:
		if h.Offset != 0 {
			return frameHeader{}, fmt.Errorf("%w: start frame at offset %d", errBadFrame, h.Offset)
		}
		if h.FragLen == 0 && h.MsgLen != 0 {
			return frameHeader{}, fmt.Errorf("%w: empty start frame of a %d-byte message", errBadFrame, h.MsgLen)
		}
	case frameData:
		if h.FragLen == 0 || h.Offset == 0 {
			return frameHeader{}, fmt.Errorf("%w: data frame of %d bytes at offset %d", errBadFrame, h.FragLen, h.Offset)
		}
	case frameBye:
		if h != (frameHeader{Kind: frameBye}) {
			return frameHeader{}, fmt.Errorf("%w: bye frame with nonzero fields", errBadFrame)
		}
	default:
		return frameHeader{}, fmt.Errorf("%w: unknown kind %d", errBadFrame, h.Kind)
	}
	return h, nil
}
