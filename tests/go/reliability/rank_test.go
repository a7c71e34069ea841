// Package reliability tests failure handling across processes: the test
// binary re-runs itself as the ranks of a job (HCCL_GO_REL_RANK set), which
// meet through files in a directory, so a rank can really die (SIGKILL) and
// the survivors be watched from outside.
package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
)

// Environment of a rank process.
const (
	envRank      = "HCCL_GO_REL_RANK"
	envWorld     = "HCCL_GO_REL_WORLD"
	envDir       = "HCCL_GO_REL_DIR"
	envVictim    = "HCCL_GO_REL_VICTIM"
	envKillAfter = "HCCL_GO_REL_KILL_AFTER"
)

// rankTimeout is the op timeout of the rank processes: far above
// noticeDeadline, so that a survivor that only timed out fails the kill test.
const rankTimeout = 60 * time.Second

// survivorReport is what a surviving rank prints as its last line.
type survivorReport struct {
	Rank      int     `json:"rank"`
	Iters     int     `json:"iters"`
	LatencyMs float64 `json:"latency_ms"` // from the victim's kill to this rank's first error
	First     string  `json:"first"`
	Later     string  `json:"later"`
	LaterMs   float64 `json:"later_ms"`
}

func TestMain(m *testing.M) {
	if os.Getenv(envRank) != "" {
		if err := rankMain(); err != nil {
			fmt.Fprintln(os.Stderr, "rank:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func envInt(name string) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, os.Getenv(name), err)) // set by the parent test
	}
	return n
}

// rankMain runs one rank: rendezvous through files, then all_reduces until
// one fails (the victim kills itself after KILL_AFTER of them).
func rankMain() error {
	rank, world, dir := envInt(envRank), envInt(envWorld), os.Getenv(envDir)
	victim, killAfter := envInt(envVictim), envInt(envKillAfter)
	cfg, err := pgbackend.ConfigFromEnv() // the parent sets HCCL_GO_* per route
	if err != nil {
		return err
	}
	cfg.Timeout = rankTimeout
	cfg.TraceDir = dir
	c, err := connectThroughFiles(rank, world, dir, cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	buf := make([]byte, 4096)
	var failedAt time.Time
	var first error
	iters := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); iters++ {
		if rank == victim && iters == killAfter {
			stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
			if err := os.WriteFile(filepath.Join(dir, "killed_at"), []byte(stamp), 0o600); err != nil {
				return err
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, pgbackend.StreamDefault)
		if err == nil {
			err = w.Wait(ctx, 2*rankTimeout)
		}
		if err != nil {
			failedAt, first = time.Now(), err
			break
		}
	}
	if first == nil {
		return fmt.Errorf("rank %d: the all_reduce loop never failed", rank)
	}
	stamp, err := os.ReadFile(filepath.Join(dir, "killed_at"))
	if err != nil {
		return fmt.Errorf("rank %d failed without a kill: %w", rank, first)
	}
	killedAt, _ := strconv.ParseInt(string(stamp), 10, 64)
	t0 := time.Now()
	later := "a later all_reduce succeeded"
	w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, pgbackend.StreamDefault)
	if err == nil {
		err = w.Wait(ctx, 2*rankTimeout)
	}
	if err != nil {
		later = err.Error()
	}
	rep := survivorReport{
		Rank: rank, Iters: iters, LatencyMs: float64(failedAt.UnixNano()-killedAt) / 1e6,
		First: first.Error(), Later: later, LaterMs: float64(time.Since(t0).Microseconds()) / 1000,
	}
	_ = c.Destroy()
	line, _ := json.Marshal(rep)
	fmt.Println(string(line))
	return nil
}

// connectThroughFiles publishes this rank's address as dir/addr<rank> and
// waits for everyone's: a rendezvous without a store.
func connectThroughFiles(rank, world int, dir string, cfg pgbackend.Config) (*pgbackend.Communicator, error) {
	l, err := pgbackend.Listen(cfg)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".addr%d", rank))
	if err := os.WriteFile(tmp, []byte(l.Addr()), 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("addr%d", rank))); err != nil {
		return nil, err
	}
	addrs := make([]string, world)
	hosts := make([]string, world)
	deadline := time.Now().Add(30 * time.Second)
	for r := range world {
		hosts[r] = "this-host"
		for {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("addr%d", r)))
			if err == nil {
				addrs[r] = string(b)
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("rank %d: no address from rank %d", rank, r)
			}
			time.Sleep(5 * time.Millisecond) // poll interval: another process writes the file
		}
	}
	rv := pgbackend.Rendezvous{Rank: rank, Addrs: addrs, HostIDs: hosts, Secret: []byte("secret-" + filepath.Base(dir))}
	return pgbackend.Connect(context.Background(), l, rv, cfg)
}
