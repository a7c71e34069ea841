package topo

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// scaleFlags is the scale model's command line.
type scaleFlags struct {
	hosts, ranksPerHost, streamsPerPeer, streams, fdLimit, somaxconn int
	shm                                                              bool
	interLat, intraLat, storeRate, storeRTT, lazyLinks               string
	connCPU, connBytes                                               string
}

func newScaleFlagSet(f *scaleFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&f.hosts, "hosts", 2048, "hosts")
	fs.IntVar(&f.ranksPerHost, "ranks-per-host", 8, "ranks on each host")
	fs.IntVar(&f.streamsPerPeer, "streams-per-peer", 1, "TCP connections per peer (HCCL_GO_STREAMS_PER_PEER)")
	fs.IntVar(&f.streams, "streams", 2, "collective streams, an arena each (HCCL_GO_STREAMS)")
	fs.BoolVar(&f.shm, "shm-collectives", true, "arenas among the ranks of a host (HCCL_GO_SHM_COLLECTIVES)")
	fs.StringVar(&f.lazyLinks, "lazy-links", "auto", "when TCP links are made (HCCL_GO_LAZY_LINKS): 0 at init, 1 on first use, auto on first use above 64 ranks on other hosts")
	fs.StringVar(&f.interLat, "inter-lat", "5us", "one-way latency between hosts")
	fs.StringVar(&f.intraLat, "intra-lat", "1us", "one-way latency inside a host")
	fs.StringVar(&f.storeRate, "store-rate", "0", "requests per second the rendezvous store serves (through torch; 0: no store, the C API)")
	fs.StringVar(&f.storeRTT, "store-rtt", "100us", "one store request's round trip")
	fs.IntVar(&f.fdLimit, "fd-limit", 1<<20, "soft RLIMIT_NOFILE to check descriptors against")
	fs.IntVar(&f.somaxconn, "somaxconn", 4096, "listen backlog (net.core.somaxconn)")
	fs.StringVar(&f.connCPU, "conn-cpu", DefaultScaleCosts.ConnCPU.String(), "CPU per TCP connection end at init (calibrated here)")
	fs.StringVar(&f.connBytes, "conn-bytes", fmt.Sprint(DefaultScaleCosts.ConnBytes), "private bytes per TCP connection after init (calibrated here)")
	return fs
}

// ScaleUsage describes the scale model's flags.
func ScaleUsage() string { return flagUsage(newScaleFlagSet(new(scaleFlags))) }

// ParseScaleArgs parses the scale model's command line (without "scale").
func ParseScaleArgs(args []string) (ScaleConfig, error) {
	var f scaleFlags
	if err := parseFlags("scale", newScaleFlagSet(&f), args); err != nil {
		return ScaleConfig{}, err
	}
	c := DefaultScaleConfig(f.hosts, f.ranksPerHost)
	c.StreamsPerPeer, c.Streams, c.Arenas, c.LazyLinks = f.streamsPerPeer, f.streams, f.shm, f.lazyLinks
	c.FDLimit, c.Somaxconn = f.fdLimit, f.somaxconn
	var errs flagErrors
	parse := errs.add
	var err error
	c.InterLatency, err = ParseLatency(f.interLat)
	parse("inter-lat", err)
	c.IntraLatency, err = ParseLatency(f.intraLat)
	parse("intra-lat", err)
	c.StoreRTT, err = ParseLatency(f.storeRTT)
	parse("store-rtt", err)
	c.Costs.ConnCPU, err = ParseLatency(f.connCPU)
	parse("conn-cpu", err)
	c.Costs.ConnBytes, err = ParseBytes(f.connBytes)
	parse("conn-bytes", err)
	if strings.TrimSpace(f.storeRate) != "0" {
		var rate float64
		_, err := fmt.Sscan(f.storeRate, &rate)
		if err == nil && rate <= 0 {
			err = errors.New("must be positive")
		}
		parse("store-rate", err)
		c.StoreRate = rate
	}
	if err := errs.err("scale"); err != nil {
		return ScaleConfig{}, err
	}
	if err := c.validate(); err != nil {
		return ScaleConfig{}, fmt.Errorf("scale: %w", err)
	}
	return c, nil
}

// ScaleJSON is the scale model for the C ABI (and Python): argsJSON is an
// object of flag names (with - or _) to values, as SimulateJSON's; the
// answer is ScaleResult as JSON plus "table", the text the command prints.
func ScaleJSON(argsJSON string) (string, error) {
	return answerJSON("scale", argsJSON, func(args []string) (any, error) {
		cfg, err := ParseScaleArgs(args)
		if err != nil {
			return nil, err
		}
		res, err := ScaleModel(cfg)
		if err != nil {
			return nil, err
		}
		return struct {
			ScaleResult
			Table string `json:"table"`
		}{res, res.Table()}, nil
	})
}
