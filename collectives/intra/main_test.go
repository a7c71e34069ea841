package intra

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/transport/arena"
)

// Cross-process tests and benchmarks re-run this test binary as rank 1 of a
// 2-rank arena: helperEnv names its role, and it exits before any test runs.
func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if err := runHelper(role); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helpers are the roles a helper process can play.
var helpers = map[string]func(ctx context.Context, a *arena.Arena) error{
	"bench":      helperBench,
	"spin":       helperSpin,
	"spinsc":     helperSpinSingleCopy,
	"singlecopy": helperSingleCopy,
}

func runHelper(role string) error {
	fn, ok := helpers[role]
	if !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := benchArenaConfig(os.Getenv(dirEnv))
	switch role {
	case "spin", "spinsc":
		cfg.DataBytes = 1 << 20 // as TestPeerKilledMidOp
	case "singlecopy":
		cfg = testArenaConfig(os.Getenv(dirEnv))
	}
	a, err := arena.Connect(ctx, 1, []int{0, 1}, os.Getenv(jobEnv), cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(ctx, a)
}
