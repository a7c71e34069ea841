package tcp

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// logRecorder collects Logf lines and lets a test wait for them.
type logRecorder struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) logf(format string, args ...any) {
	r.t.Logf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, strings.TrimSpace(sprintf(format, args...)))
}

func (r *logRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// stranger is something that connects to a rank's listener and misbehaves.
// It returns the bytes the listener answered (up to EOF or a short timeout).
type stranger func(t *testing.T, conn net.Conn)

// readChallenge reads the acceptor's opening message.
func readChallenge(t *testing.T, conn net.Conn) [nonceSize]byte {
	buf := make([]byte, challengeSize)
	_, err := io.ReadFull(conn, buf)
	require.NoError(t, err)
	nonce, err := decodeChallenge(buf)
	require.NoError(t, err)
	return nonce
}

// expectRefusal reads what the acceptor says before closing: a welcome with
// the given status, or nothing (status < 0), then EOF. The acceptor may
// reset the connection when it closes with unread input, losing its last
// words: then only the closing is checked.
func expectRefusal(t *testing.T, conn net.Conn, status int) {
	rest, err := io.ReadAll(conn)
	if err != nil {
		require.ErrorIs(t, err, syscall.ECONNRESET, "acceptor should close the connection")
		return
	}
	if status < 0 {
		assert.Empty(t, rest)
		return
	}
	w, err := decodeWelcome(rest)
	require.NoError(t, err)
	assert.Equal(t, uint16(status), w.Status)
}

func signedHello(secret []byte, nonce [nonceSize]byte, h hello) []byte {
	h.MAC = helloMAC(secret, nonce, &h)
	return encodeHello(h)
}

// TestHandshakeRejectsStrangers has strangers connect to rank 0 while the
// job is setting up; each is refused and logged, and the legitimate ranks
// connect and exchange data regardless.
func TestHandshakeRejectsStrangers(t *testing.T) {
	good := hello{Rank: 1, Size: 2, Stream: 0, Streams: 1, MaxFrame: defaultMaxFrameBytes}
	cases := []struct {
		name string
		act  stranger
	}{
		{"garbage", func(t *testing.T, c net.Conn) {
			readChallenge(t, c)
			_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("z", 100)))
			require.NoError(t, err)
			expectRefusal(t, c, -1)
		}},
		{"wrong version", func(t *testing.T, c net.Conn) {
			nonce := readChallenge(t, c)
			b := signedHello(testSecret, nonce, good)
			binary.LittleEndian.PutUint16(b[4:], protoVersion+1)
			_, err := c.Write(b)
			require.NoError(t, err)
			expectRefusal(t, c, statusBadVersion)
		}},
		{"wrong secret", func(t *testing.T, c net.Conn) {
			nonce := readChallenge(t, c)
			_, err := c.Write(signedHello([]byte("guess"), nonce, good))
			require.NoError(t, err)
			expectRefusal(t, c, statusBadAuth)
		}},
		{"replayed proof", func(t *testing.T, c net.Conn) {
			readChallenge(t, c)
			var stale [nonceSize]byte // a proof made for another nonce
			_, err := c.Write(signedHello(testSecret, stale, good))
			require.NoError(t, err)
			expectRefusal(t, c, statusBadAuth)
		}},
		{"rank out of range", func(t *testing.T, c net.Conn) {
			nonce := readChallenge(t, c)
			h := good
			h.Rank = 7
			_, err := c.Write(signedHello(testSecret, nonce, h))
			require.NoError(t, err)
			expectRefusal(t, c, statusBadPeer)
		}},
		{"wrong stream count", func(t *testing.T, c net.Conn) {
			nonce := readChallenge(t, c)
			h := good
			h.Streams = 3
			_, err := c.Write(signedHello(testSecret, nonce, h))
			require.NoError(t, err)
			expectRefusal(t, c, statusBadPeer)
		}},
		{"truncated hello", func(t *testing.T, c net.Conn) {
			nonce := readChallenge(t, c)
			_, err := c.Write(signedHello(testSecret, nonce, good)[:20])
			require.NoError(t, err)
			require.NoError(t, c.(*net.TCPConn).CloseWrite())
			expectRefusal(t, c, -1)
		}},
	}

	rec := &logRecorder{t: t}
	ls, addrs := listenAll(t, 2)
	cfg := Config{Secret: testSecret, ConnectTimeout: 10 * time.Second, HandshakeTimeout: 2 * time.Second, Logf: rec.logf}
	ctx := context.Background()

	// Rank 0 starts accepting; a silent stranger holds a connection open.
	var ep0 transport.Endpoint
	var err0 error
	done0 := make(chan struct{})
	go func() { ep0, err0 = Connect(ctx, ls[0], 0, addrs, cfg); close(done0) }()
	silent, err := net.Dial("tcp", addrs[0])
	require.NoError(t, err)
	defer silent.Close()

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addrs[0], time.Second)
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
			c.act(t, conn)
		})
	}
	require.Eventually(t, func() bool { return rec.count("refused connection") >= len(cases) },
		5*time.Second, 5*time.Millisecond)

	// The real rank 1 arrives late and everything works.
	ep1, err := Connect(ctx, ls[1], 1, addrs, cfg)
	require.NoError(t, err)
	defer ep1.Close()
	<-done0
	require.NoError(t, err0)
	defer ep0.Close()

	require.NoError(t, ep1.Send(ctx, 0, 1, []byte("hello")))
	got := make([]byte, 5)
	require.NoError(t, ep0.Recv(ctx, 1, 1, got))
	assert.Equal(t, "hello", string(got))

	// Setup is over: the listener is gone, strangers are refused by the
	// kernel and cannot reach the running endpoint.
	_, err = net.DialTimeout("tcp", addrs[0], time.Second)
	require.Error(t, err)
	require.NoError(t, ep0.Send(ctx, 1, 2, []byte("still")))
	got = make([]byte, 5)
	require.NoError(t, ep1.Recv(ctx, 0, 2, got))
	assert.Equal(t, "still", string(got))
}

// TestHandshakeWrongSecretFailsFast: ranks given different secrets both fail
// with ErrBadSecret long before the connect timeout: the dialer is refused
// for good, and the acceptor, which saw a connection claim the dialer's rank
// without the secret, gives up once the dialer's listener closes.
func TestHandshakeWrongSecretFailsFast(t *testing.T) {
	ls, addrs := listenAll(t, 2)
	ctx := context.Background()
	rec := &logRecorder{t: t}
	acceptor := make(chan error, 1)
	start := time.Now()
	go func() {
		ep, err := Connect(ctx, ls[0], 0, addrs, Config{Secret: []byte("job A"), ConnectTimeout: time.Minute, Logf: rec.logf})
		if err == nil {
			_ = ep.Close()
		}
		acceptor <- err
	}()
	_, err := Connect(ctx, ls[1], 1, addrs, Config{Secret: []byte("job B"), ConnectTimeout: time.Minute})
	require.Error(t, err)
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.Peer)
	assert.Equal(t, "connect", pe.Op)
	assert.ErrorIs(t, err, ErrBadSecret)
	assert.Less(t, time.Since(start), 2*time.Second)

	err = <-acceptor
	require.Error(t, err)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.ErrorIs(t, err, ErrBadSecret)
	assert.Contains(t, err.Error(), "claiming to be rank 1")
	// The unreachable window (5 s) would be the bound without the secret's
	// note; a minute is the connect timeout.
	assert.Less(t, time.Since(start), 4*time.Second, "the acceptor waited for the dialer that had given up: %v", err)
	assert.Positive(t, rec.count("secret"))
}

// TestConnectTimeout: a rank whose peer never shows up fails with a
// PeerError naming it once ConnectTimeout passes.
func TestConnectTimeout(t *testing.T) {
	ls, addrs := listenAll(t, 3)
	defer ls[0].Close()
	defer ls[1].Close()
	start := time.Now()
	_, err := Connect(context.Background(), ls[2], 2, addrs, Config{Secret: testSecret, ConnectTimeout: 300 * time.Millisecond})
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "connect", pe.Op)
	assert.Contains(t, err.Error(), "timed out")
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestConnectSingleRankAndBadArgs(t *testing.T) {
	l, err := Listen("")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(l.Addr(), "127.0.0.1:"))
	ep, err := Connect(context.Background(), l, 0, []string{l.Addr()}, Config{})
	require.NoError(t, err)
	require.NoError(t, ep.Close())

	for _, c := range []struct {
		name string
		rank int
		cfg  Config
	}{
		{"rank out of range", 3, Config{}},
		{"too many streams", 0, Config{StreamsPerPeer: 1000}},
		{"tiny frames", 0, Config{MaxFrameBytes: 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Listen("")
			require.NoError(t, err)
			_, err = Connect(context.Background(), l, c.rank, []string{l.Addr(), "127.0.0.1:1"}, c.cfg)
			require.Error(t, err)
		})
	}
}

// TestHandshakeDuplicate: a second authenticated connection for a link slot
// that is taken is refused; the setup completes with the first one.
func TestHandshakeDuplicate(t *testing.T) {
	ls, addrs := listenAll(t, 2)
	rec := &logRecorder{t: t}
	cfg := Config{Secret: testSecret, StreamsPerPeer: 2, ConnectTimeout: 5 * time.Second, Logf: rec.logf}
	type result struct {
		ep  transport.Endpoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		ep, err := Connect(context.Background(), ls[0], 0, addrs, cfg)
		done <- result{ep, err}
	}()
	_ = ls[1].Close()

	// Play rank 1 by hand.
	dial := func(stream uint16) (net.Conn, welcome) {
		conn, err := net.DialTimeout("tcp", addrs[0], time.Second)
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
		nonce := readChallenge(t, conn)
		h := hello{Rank: 1, Size: 2, Stream: stream, Streams: 2, MaxFrame: defaultMaxFrameBytes}
		_, err = conn.Write(signedHello(testSecret, nonce, h))
		require.NoError(t, err)
		buf := make([]byte, welcomeSize)
		_, err = io.ReadFull(conn, buf)
		require.NoError(t, err)
		w, err := decodeWelcome(buf)
		require.NoError(t, err)
		h.MAC = helloMAC(testSecret, nonce, &h)
		assert.True(t, verifyWelcome(testSecret, &h, nonce, &w), "acceptor proves the secret too")
		return conn, w
	}
	first, w := dial(0)
	defer first.Close()
	assert.Equal(t, uint16(statusOK), w.Status)
	dup, w := dial(0)
	defer dup.Close()
	assert.Equal(t, uint16(statusDuplicate), w.Status)
	second, w := dial(1)
	defer second.Close()
	assert.Equal(t, uint16(statusOK), w.Status)

	r := <-done
	require.NoError(t, r.err)
	defer r.ep.Close()
	assert.Equal(t, 1, rec.count("duplicate"))
}
