package netns_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/topo"
)

// A rank is this test binary run again inside a namespace (ip netns exec),
// with its orders in $HCCL_GO_NETNS_RANK; TestMain sends it to rankMain.
const rankEnv = "HCCL_GO_NETNS_RANK"

// rankSpec is one rank process's orders.
type rankSpec struct {
	Dir       string // shared: rendezvous files and results
	Rank      int
	Size      int
	StoreHost string // the rendezvous store's host, as MASTER_ADDR ("": a file store)
	Advertise string // host to publish instead of the listener's ("": the listener's)
	Secret    string
	Variants  []variant
	Deadline  time.Time
}

// variant is one communicator the ranks build, one after the other, and
// what they measure on it.
type variant struct {
	Name    string
	Options string // pgbackend options ("algo=hier;topo_ring=rank")
	Sizes   []int  // float32 all_reduce sizes in bytes to time (none: init only)
	Iters   int    // timed iterations per size, after one warm-up
}

// rankResult is what a rank reports for one variant.
type rankResult struct {
	Variant    string
	Rank       int
	Addrs      []string // what the ranks published
	Transports []string
	Source     string
	ProbeMs    float64
	Hosts      int
	Ring       []int
	Groups     [][]int
	Runs       []sizeRun
}

// sizeRun is one size's timings and the model's view of it.
type sizeRun struct {
	Bytes int
	Algo  string             // what ran: the override or the model's choice
	Times []float64          // seconds per iteration on this rank
	Pred  map[string]float64 // seconds per algorithm; "ring" follows this variant's ring
	Model string             // the model's own choice
}

func rankMain(spec rankSpec) error {
	ctx, cancel := context.WithDeadline(context.Background(), spec.Deadline)
	defer cancel()
	for vi, v := range spec.Variants {
		if err := runVariant(ctx, spec, vi, v); err != nil {
			return fmt.Errorf("rank %d, variant %s: %w", spec.Rank, v.Name, err)
		}
	}
	return nil
}

func runVariant(ctx context.Context, spec rankSpec, vi int, v variant) error {
	cfg, err := pgbackend.ConfigFromEnv()
	if err != nil {
		return err
	}
	if err := cfg.ApplyOptions(v.Options); err != nil {
		return err
	}
	// As torch_hccl_go's rendezvous: host ids first, then the listener
	// (whose address depends on them), then the addresses.
	host, err := topo.LocalIdentity()
	if err != nil {
		return err
	}
	rv := filepath.Join(spec.Dir, fmt.Sprintf("rv%d", vi))
	hosts, err := fileGather(ctx, filepath.Join(rv, "host"), spec.Rank, spec.Size, host)
	if err != nil {
		return err
	}
	l, err := pgbackend.ListenRank(cfg, pgbackend.ListenHints{Rank: spec.Rank, HostIDs: hosts, StoreHost: spec.StoreHost})
	if err != nil {
		return err
	}
	addr := l.Addr()
	if spec.Advertise != "" {
		_, port, _ := net.SplitHostPort(addr)
		addr = net.JoinHostPort(spec.Advertise, port)
	}
	addrs, err := fileGather(ctx, filepath.Join(rv, "addr"), spec.Rank, spec.Size, addr)
	if err != nil {
		l.Close()
		return err
	}
	c, err := pgbackend.Connect(ctx, l, pgbackend.Rendezvous{Rank: spec.Rank, Addrs: addrs, HostIDs: hosts, Secret: []byte(spec.Secret)}, cfg)
	if err != nil {
		return err
	}
	res, err := measure(c, v, cfg)
	res.Addrs = addrs
	if derr := c.Destroy(); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(spec.Dir, fmt.Sprintf("result-%s-%d.json", v.Name, spec.Rank)), data)
}

// measure times v's all_reduce sizes on c and records the model's view.
func measure(c *pgbackend.Communicator, v variant, cfg pgbackend.Config) (rankResult, error) {
	info := c.Topology()
	hosts, _ := topo.GroupHosts(info.Graph.HostIDs())
	res := rankResult{
		Variant: v.Name, Rank: c.Rank(), Transports: c.Info().Transports, Source: info.Source,
		ProbeMs: float64(info.ProbeTime) / 1e6, Hosts: len(hosts), Ring: info.Ring, Groups: info.Groups,
	}
	p := c.Size()
	for _, n := range v.Sizes {
		run := sizeRun{Bytes: n, Pred: map[string]float64{}}
		if m := info.Model; m != nil {
			algo, _, all, err := m.Choose(topo.OpAllReduce, n)
			if err != nil {
				return res, err
			}
			run.Model = algo
			for a, d := range all {
				run.Pred[a] = d.Seconds()
			}
			ring, err := m.PredictRing(topo.OpAllReduce, info.Ring, n)
			if err != nil {
				return res, err
			}
			run.Pred["ring"] = ring.Seconds()
		}
		algo, err := c.ChooseAlgorithm(topo.OpAllReduce, n)
		if err != nil {
			return res, err
		}
		run.Algo = algo
		send := make([]byte, n)
		for i := 0; i+4 <= n; i += 4 {
			binary.LittleEndian.PutUint32(send[i:], math.Float32bits(float32(c.Rank()+1)))
		}
		recv := make([]byte, n)
		for it := range v.Iters + 1 {
			if err := wait(c.Barrier(pgbackend.StreamDefault)); err != nil {
				return res, fmt.Errorf("barrier: %w", err)
			}
			start := time.Now()
			if err := wait(c.AllReduce(send, recv, reduce.Float32, reduce.Sum, 0, pgbackend.StreamDefault)); err != nil {
				return res, fmt.Errorf("all_reduce of %d bytes: %w", n, err)
			}
			d := time.Since(start)
			if it == 0 {
				if err := checkSum(recv, p); err != nil {
					return res, fmt.Errorf("all_reduce of %d bytes with %s: %w", n, algo, err)
				}
				continue // warm-up
			}
			run.Times = append(run.Times, d.Seconds())
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func wait(w interface {
	Wait(context.Context, time.Duration) error
}, err error) error {
	if err != nil {
		return err
	}
	return w.Wait(context.Background(), 5*time.Minute)
}

// checkSum checks every element of an all_reduce of rank+1 over p ranks.
func checkSum(buf []byte, p int) error {
	want := float32(p * (p + 1) / 2)
	for i := 0; i+4 <= len(buf); i += 4 {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(buf[i:])); got != want {
			return fmt.Errorf("element %d is %v, want %v", i/4, got, want)
		}
	}
	return nil
}

// fileGather publishes this rank's value in dir and waits for every
// rank's (the namespaces share the file system, not a network).
func fileGather(ctx context.Context, dir string, rank, size int, value string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, fmt.Sprint(rank)), []byte(value)); err != nil {
		return nil, err
	}
	values := make([]string, size)
	for r := range size {
		for {
			data, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(r)))
			if err == nil {
				values[r] = string(data)
				break
			}
			if !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("rendezvous %s: rank %d never published: %w", dir, r, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return values, nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
