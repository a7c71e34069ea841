package tcp

import (
	"bufio"
	"bytes"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func getLowat(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	require.NoError(t, err)
	var v int
	var gerr error
	require.NoError(t, raw.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	}))
	require.NoError(t, gerr)
	return v
}

func TestRcvLowatSetterSetsTheSocket(t *testing.T) {
	c, _ := tcpPair(t)
	set := rcvLowatSetter(c)
	require.NotNil(t, set)
	assert.Equal(t, 1, getLowat(t, c))
	require.NoError(t, set(lowatMaxBytes))
	assert.Equal(t, lowatMaxBytes, getLowat(t, c))
	require.NoError(t, set(1))
	assert.Equal(t, 1, getLowat(t, c))
	_ = c.Close()
	assert.Error(t, set(1), "a closed connection reports the failure")
}

// TestReadFullTrickle: a large body that arrives in small pieces with
// pauses is read completely (the mark never waits for bytes past the body),
// and the mark is back at 1 for the header read that follows.
func TestReadFullTrickle(t *testing.T) {
	r, w := tcpPair(t)
	s := &stream{conn: r, br: bufio.NewReaderSize(r, readBufferSize), lowat: newRcvLowat(rcvLowatSetter(r))}
	const n = lowatMaxBytes + lowatMinBytes + 1234
	body := payload(n, 7)
	hdr := []byte("0123456789012345678901234567890123456789")
	bodyRead := make(chan struct{})
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for off := 0; off < n; off += 9000 {
			if _, err := w.Write(body[off:min(off+9000, n)]); err != nil {
				return
			}
			if off%(90000) == 0 {
				time.Sleep(2 * time.Millisecond) // a pause in the trickle
			}
		}
		select { // the header comes once the body is read, alone
		case <-bodyRead:
		case <-quit:
			return
		}
		_, _ = w.Write(hdr)
	}()
	got := make([]byte, n)
	done := make(chan error, 1)
	go func() {
		if _, err := s.readFull(got, false); err != nil {
			done <- err
			return
		}
		close(bodyRead)
		h := make([]byte, len(hdr))
		_, err := s.readFull(h, true)
		if err == nil && !bytes.Equal(h, hdr) {
			err = assert.AnError
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("readFull hung: the mark waited for bytes that never came")
	}
	require.True(t, bytes.Equal(body, got))
	assert.Equal(t, 1, getLowat(t, r))
}
