package tcp

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

// helperEnv makes the test binary act as rank 1 of TestPeerProcessKilled.
const helperEnv = "HCCL_GO_TCP_TEST_HELPER"

// TestHelperRank1 is not a test: run by TestPeerProcessKilled in a child
// process, it listens, prints its address, connects to the parent (rank 0),
// sends one message and waits to be killed.
func TestHelperRank1(t *testing.T) {
	parentAddr := os.Getenv(helperEnv)
	if parentAddr == "" {
		t.Skip("helper process only")
	}
	l, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	os.Stdout.WriteString("ADDR " + l.Addr() + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ep, err := Connect(ctx, l, 1, []string{parentAddr, l.Addr()}, Config{Secret: testSecret})
	require.NoError(t, err)
	require.NoError(t, ep.Send(ctx, 0, 1, []byte("alive")))
	<-ctx.Done()
}

// TestPeerProcessKilled: when a peer process dies (SIGKILL, no goodbye), a
// receive pending on it fails within milliseconds with a PeerError naming it.
func TestPeerProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	l, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestHelperRank1$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+l.Addr())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	var childAddr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			childAddr = a
			break
		}
	}
	require.NotEmpty(t, childAddr, "child did not report its address")
	go func() { _, _ = bufio.NewReader(out).WriteTo(discard{}) }()

	ep, err := Connect(ctx, l, 0, []string{l.Addr(), childAddr}, Config{Secret: testSecret})
	require.NoError(t, err)
	defer ep.Close()
	got := make([]byte, 5)
	require.NoError(t, ep.Recv(ctx, 1, 1, got))
	assert.Equal(t, "alive", string(got))

	pending := make(chan error, 1)
	go func() { pending <- ep.Recv(ctx, 1, 2, make([]byte, 8)) }()
	transporttest.WaitPosted(t, ep, 1, 2)
	killed := time.Now()
	require.NoError(t, cmd.Process.Kill())
	err = <-pending
	noticed := time.Since(killed)
	t.Logf("peer death noticed after %v", noticed)
	var pe *transport.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Peer)
	assert.Less(t, noticed, time.Second)
	require.ErrorAs(t, ep.Send(ctx, 1, 3, []byte("x")), &pe)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
