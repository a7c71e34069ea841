package netns_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// A rank is this test binary run again inside a namespace (ip netns exec),
// with its orders in $HCCL_GO_NETNS_RANK; TestMain sends it to rankMain.
const rankEnv = "HCCL_GO_NETNS_RANK"

// rankSpec is one rank process's orders.
type rankSpec struct {
	Dir      string // shared: rendezvous files and results
	Rank     int
	Size     int
	Bind     string // listen address ("" = pgbackend.Listen: HCCL_GO_SOCKET_IFNAME)
	Secret   string
	Variants []variant
	Deadline time.Time
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
	var l *tcp.Listener
	if spec.Bind != "" {
		l, err = tcp.Listen(spec.Bind)
	} else {
		l, err = pgbackend.Listen(cfg)
	}
	if err != nil {
		return err
	}
	host, err := topo.LocalIdentity()
	if err != nil {
		l.Close()
		return err
	}
	addrs, hosts, err := fileRendezvous(ctx, filepath.Join(spec.Dir, fmt.Sprintf("rv%d", vi)), spec.Rank, spec.Size, l.Addr(), host)
	if err != nil {
		l.Close()
		return err
	}
	c, err := pgbackend.Connect(ctx, l, pgbackend.Rendezvous{Rank: spec.Rank, Addrs: addrs, HostIDs: hosts, Secret: []byte(spec.Secret)}, cfg)
	if err != nil {
		return err
	}
	res, err := measure(c, v, cfg)
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

// fileRendezvous publishes this rank's address and host in dir and waits
// for every rank's (the namespaces share the file system, not a network).
func fileRendezvous(ctx context.Context, dir string, rank, size int, addr, host string) (addrs, hosts []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	data, _ := json.Marshal([2]string{addr, host})
	if err := writeAtomic(filepath.Join(dir, fmt.Sprint(rank)), data); err != nil {
		return nil, nil, err
	}
	addrs, hosts = make([]string, size), make([]string, size)
	for r := range size {
		for {
			data, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(r)))
			if err == nil {
				var e [2]string
				if err := json.Unmarshal(data, &e); err != nil {
					return nil, nil, err
				}
				addrs[r], hosts[r] = e[0], e[1]
				break
			}
			if !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			select {
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("rendezvous: rank %d never published: %w", r, ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return addrs, hosts, nil
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
