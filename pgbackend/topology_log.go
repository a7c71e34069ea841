package pgbackend

import (
	"cmp"
	"fmt"
	"log"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/topo"
)

// infoLog writes HCCL_GO_DEBUG=INFO lines to stderr, prefixed with the
// rank; once() writes a line the first time its key comes up. A nil or
// disabled infoLog writes nothing.
type infoLog struct {
	l    *log.Logger
	mu   sync.Mutex
	seen map[string]bool
}

func newInfoLog(cfg Config, rank int) *infoLog {
	if cfg.Debug != "INFO" {
		return nil
	}
	return &infoLog{l: log.New(os.Stderr, fmt.Sprintf("hccl_go INFO rank %d: ", rank), 0), seen: map[string]bool{}}
}

func (g *infoLog) enabled() bool { return g != nil }

func (g *infoLog) printf(format string, args ...any) {
	if g != nil {
		g.l.Printf(format, args...)
	}
}

func (g *infoLog) once(key, format string, args ...any) {
	if g == nil {
		return
	}
	g.mu.Lock()
	done := g.seen[key]
	g.seen[key] = true
	g.mu.Unlock()
	if !done {
		g.l.Printf(format, args...)
	}
}

// logTopology logs, once per communicator, where the topology came from,
// the links, the ring and the hierarchy.
func (t *topology) logTopology(rv Rendezvous, cfg Config, nhosts int) {
	if !t.log.enabled() {
		return
	}
	src := t.source
	switch t.source {
	case "probe":
		src = fmt.Sprintf("probe (%s)", t.probeTime.Round(time.Millisecond))
	case "file":
		src = "file " + cfg.TopoFile
	case "hosts":
		src = "host identities, nominal links"
	}
	t.log.printf("topology from %s: %d ranks on %d hosts; this rank listens on %s", src, len(t.ring), nhosts, listenInterface(rv))
	if g := t.graph; g != nil && g.Size() <= 16 && g.Size() > 1 {
		numa := make([]int, g.Size())
		for i := range numa {
			numa[i] = g.Rank(i).NUMA
		}
		t.log.printf("NUMA nodes %s", formatInts(numa))
		for i := range g.Size() {
			var b strings.Builder
			for j := range g.Size() {
				if i == j {
					b.WriteString("        -")
					continue
				}
				fmt.Fprintf(&b, " %8s", compactBandwidth(g.Bandwidth(i, j)))
			}
			t.log.printf("links from rank %2d (bytes/s):%s", i, b.String())
		}
	}
	if t.model != nil {
		for _, line := range strings.Split(strings.TrimSpace(t.model.Summary()), "\n") {
			t.log.printf("model: %s", line)
		}
	} else {
		t.log.printf("model: none (one host, nothing measured): collectives choose by size")
		t.log.printf("model: NUMA level: %s", t.numaWhy())
	}
	if cfg.TopoRing != "" {
		t.log.printf("ring forced by HCCL_GO_TOPO_RING: %s", formatInts(t.ring))
	}
	if cfg.TopoDumpFile != "" && rv.Rank == 0 {
		t.log.printf("topology written to %s", cfg.TopoDumpFile)
	}
}

// listenInterface names this rank's address and the interface holding it.
func listenInterface(rv Rendezvous) string {
	if rv.Rank >= len(rv.Addrs) {
		return "?"
	}
	addr := rv.Addrs[rv.Rank]
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return addr
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == host {
				return addr + " (" + ifc.Name + ")"
			}
		}
	}
	return addr
}

// compactBandwidth writes bytes/s in at most 8 characters ("125M", "4.1G").
func compactBandwidth(bw float64) string {
	switch {
	case bw >= 1e9:
		return strconv.FormatFloat(bw/1e9, 'f', 1, 64) + "G"
	case bw >= 1e6:
		return strconv.FormatFloat(bw/1e6, 'f', 0, 64) + "M"
	default:
		return strconv.FormatFloat(bw/1e3, 'f', 0, 64) + "K"
	}
}

func formatInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// formatPredictions lists predictions fastest first ("hier 550ms, ring 805ms").
func formatPredictions(all map[string]time.Duration) string {
	algos := make([]string, 0, len(all))
	for a := range all {
		algos = append(algos, a)
	}
	slices.SortFunc(algos, func(a, b string) int {
		return cmp.Or(cmp.Compare(all[a], all[b]), strings.Compare(a, b))
	})
	parts := make([]string, len(algos))
	for i, a := range algos {
		parts[i] = a + " " + topo.FormatDuration(all[a])
	}
	return strings.Join(parts, ", ")
}
