package tcp

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzFrameHeader feeds arbitrary bytes to the frame decoder: it must never
// panic, and whatever it accepts must re-encode to the same bytes and obey
// the bounds the reader relies on.
func FuzzFrameHeader(f *testing.F) {
	var b [headerSize]byte
	encodeHeader(b[:], frameHeader{Kind: frameStart, FragLen: 5, Tag: 7, Seq: 0, MsgLen: 5})
	f.Add(bytes.Clone(b[:]), 1<<20)
	encodeHeader(b[:], frameHeader{Kind: frameData, FragLen: 4096, Tag: 1 << 63, Seq: 9, MsgLen: 1 << 20, Offset: 8192})
	f.Add(bytes.Clone(b[:]), 4096)
	encodeHeader(b[:], frameHeader{Kind: frameStart})
	f.Add(bytes.Clone(b[:]), 4096)
	f.Add([]byte("garbage"), 4096)
	f.Fuzz(func(t *testing.T, data []byte, maxFrame int) {
		h, err := decodeHeader(data, maxFrame)
		if err != nil {
			require.ErrorIs(t, err, errBadFrame)
			return
		}
		require.LessOrEqual(t, int64(h.FragLen), int64(maxFrame))
		require.LessOrEqual(t, h.MsgLen, uint64(maxMessageBytes))
		require.LessOrEqual(t, h.Offset+uint64(h.FragLen), h.MsgLen)
		var out [headerSize]byte
		encodeHeader(out[:], h)
		require.Equal(t, data[:headerSize], out[:])
	})
}

// FuzzHandshake feeds arbitrary bytes to every handshake decoder and to the
// proof checks: no panic, accepted messages round-trip, and a hello signed
// with one secret never verifies under another.
func FuzzHandshake(f *testing.F) {
	var nonce [nonceSize]byte
	h := hello{Rank: 1, Size: 2, Streams: 1, MaxFrame: defaultMaxFrameBytes}
	h.MAC = helloMAC([]byte("s"), nonce, &h)
	w := welcome{Status: statusOK, Rank: 0, MaxFrame: defaultMaxFrameBytes}
	w.MAC = welcomeMAC([]byte("s"), &h, nonce, &w)
	f.Add(encodeChallenge(nonce), []byte("s"))
	f.Add(encodeHello(h), []byte("s"))
	f.Add(encodeWelcome(w), []byte("s"))
	f.Add([]byte("HCGT\x02\x00\x02\x00"), []byte(""))
	f.Add([]byte{}, []byte("x"))
	f.Fuzz(func(t *testing.T, data, secret []byte) {
		if n, err := decodeChallenge(data); err == nil {
			require.Equal(t, data, encodeChallenge(n))
		}
		if h, err := decodeHello(data); err == nil {
			require.Equal(t, data, encodeHello(h))
			ok := verifyHello(secret, nonce, &h)
			h2 := h
			h2.MAC = helloMAC(secret, nonce, &h)
			require.True(t, verifyHello(secret, nonce, &h2))
			require.False(t, verifyHello(append(bytes.Clone(secret), 'x'), nonce, &h2))
			if ok {
				require.Equal(t, h.MAC, h2.MAC)
			}
			if w, err := decodeWelcome(encodeWelcome(welcome{Rank: h.Rank})); err == nil {
				w.MAC = welcomeMAC(secret, &h, nonce, &w)
				require.True(t, verifyWelcome(secret, &h, nonce, &w))
			}
		}
		if w, err := decodeWelcome(data); err == nil {
			require.Equal(t, data, encodeWelcome(w))
			_ = verifyWelcome(secret, &hello{}, nonce, &w)
			_ = statusText(w.Status)
		}
		_ = checkPrefix(data, kindHello)
	})
}
