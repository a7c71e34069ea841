package topo

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// simFlags is the simulator's command line, in the units of units.go.
type simFlags struct {
	op, size, topoFile                   string
	hosts, ranksPerHost                  int
	interBW, intraBW, interLat, intraLat string
	reduceBW, copyBW, chunk              string
	hier, compression, codecBW           string
}

func newSimFlagSet(f *simFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.op, "op", "allreduce", "collective: allreduce, allgather, reducescatter, broadcast")
	fs.StringVar(&f.size, "size", "1GiB", "bytes of the whole buffer (B, KiB, MiB, GiB, KB, MB, GB)")
	fs.IntVar(&f.hosts, "hosts", 2, "hosts of the synthetic cluster")
	fs.IntVar(&f.ranksPerHost, "ranks-per-host", 8, "ranks on each host")
	fs.StringVar(&f.interBW, "inter-bw", "200Gbit", "bandwidth of each host's NIC to other hosts, per direction (Gbit, GB, GiB, ... per second)")
	fs.StringVar(&f.intraBW, "intra-bw", "100GB", "bandwidth of a link between two ranks of one host")
	fs.StringVar(&f.interLat, "inter-lat", "5us", "latency between hosts")
	fs.StringVar(&f.intraLat, "intra-lat", "1us", "latency inside a host")
	fs.StringVar(&f.topoFile, "topo-file", "", "topology file (HCCL_GO_TOPO_DUMP_FILE format) instead of the synthetic cluster")
	fs.StringVar(&f.reduceBW, "reduce-bw", "0", "bytes per second a rank reduces (0: reduction is free)")
	fs.StringVar(&f.copyBW, "copy-bw", "0", "bytes per second a rank copies locally (0: copies are free)")
	fs.StringVar(&f.chunk, "chunk", "256KiB", "pipelining chunk of the chain broadcast")
	fs.StringVar(&f.hier, "hier", "arena", "hierarchical algorithms: arena (groups are the hosts, intra-host phases in shared memory at --copy-bw/--reduce-bw, as the library runs them across hosts) or messages (over the intra-host links)")
	fs.StringVar(&f.compression, "compression", "none", "wire format of all_reduce (HCCL_GO_COMPRESSION): none, fp16 or bf16 (16-bit floats: half the bytes, on the ring's every hop and the hierarchy's inter-host phase)")
	fs.StringVar(&f.codecBW, "codec-bw", "0", "bytes of float32 per second a rank encodes to or decodes from the wire format (0: free)")
	return fs
}

// SimUsage describes the simulator's flags.
func SimUsage() string { return flagUsage(newSimFlagSet(new(simFlags))) }

// ParseSimArgs parses the simulator's command line (without the
// "simulate" word). -h yields an error wrapping flag.ErrHelp.
func ParseSimArgs(args []string) (SimConfig, error) {
	var f simFlags
	if err := parseFlags("simulate", newSimFlagSet(&f), args); err != nil {
		return SimConfig{}, err
	}
	return f.config()
}

func (f *simFlags) config() (SimConfig, error) {
	cfg := SimConfig{Op: f.op, TopoFile: f.topoFile}
	cfg.Cluster.Hosts, cfg.Cluster.RanksPerHost = f.hosts, f.ranksPerHost
	var errs flagErrors
	parse := errs.add
	var err error
	cfg.Bytes, err = ParseBytes(f.size)
	parse("size", err)
	cfg.Cluster.Inter.Bandwidth, err = ParseBandwidth(f.interBW)
	parse("inter-bw", err)
	cfg.Cluster.Intra.Bandwidth, err = ParseBandwidth(f.intraBW)
	parse("intra-bw", err)
	cfg.Cluster.Inter.Latency, err = ParseLatency(f.interLat)
	parse("inter-lat", err)
	cfg.Cluster.Intra.Latency, err = ParseLatency(f.intraLat)
	parse("intra-lat", err)
	cfg.Params.ReduceBandwidth, err = optionalBandwidth(f.reduceBW)
	parse("reduce-bw", err)
	cfg.Params.CopyBandwidth, err = optionalBandwidth(f.copyBW)
	parse("copy-bw", err)
	chunk, err := ParseBytes(f.chunk)
	parse("chunk", err)
	cfg.Params.ChunkBytes = int(chunk)
	if err == nil && chunk == 0 {
		parse("chunk", errors.New("must be positive"))
	}
	switch f.hier {
	case "arena":
		// A topology file's NUMA nodes may then make a level (cost_numa.go).
		cfg.Params.ArenaHier, cfg.Params.NUMALevel = true, true
	case "messages":
	default:
		parse("hier", fmt.Errorf("%q is neither arena nor messages", f.hier))
	}
	switch strings.ToLower(f.compression) {
	case "none", "":
	case "fp16", "bf16":
		cfg.Params.WireRatio = 0.5
	default:
		parse("compression", fmt.Errorf("%q is none of none, fp16, bf16", f.compression))
	}
	cfg.Params.CodecBandwidth, err = optionalBandwidth(f.codecBW)
	parse("codec-bw", err)
	if err := errs.err("simulate"); err != nil {
		return SimConfig{}, err
	}
	return cfg, nil
}

// optionalBandwidth is ParseBandwidth with "0" meaning "not modelled".
func optionalBandwidth(s string) (float64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	return ParseBandwidth(s)
}

// SimulateJSON is the simulator for the C ABI (and from there Python):
// argsJSON is an object of flag names (with - or _) to values, strings in
// the flags' units or numbers, e.g. {"hosts": 1024, "ranks_per_host": 8,
// "size": "1GiB", "inter_bw": "200Gbit", "intra_bw": "100GB"}. The answer
// is SimResult as JSON, plus "table": the text the command prints, and
// "elapsed_s".
func SimulateJSON(argsJSON string) (string, error) {
	return answerJSON("simulate", argsJSON, func(args []string) (any, error) {
		cfg, err := ParseSimArgs(args)
		if err != nil {
			return nil, err
		}
		res, err := Simulate(cfg)
		if err != nil {
			return nil, err
		}
		return struct {
			SimResult
			Table    string  `json:"table"`
			ElapsedS float64 `json:"elapsed_s"`
		}{res, res.Table(), res.Elapsed.Seconds()}, nil
	})
}

// jsonArgs turns a JSON object of flag names (with - or _) to strings,
// numbers or booleans into "--name=value" arguments, in name order.
func jsonArgs(argsJSON string) ([]string, error) {
	var kv map[string]any
	dec := json.NewDecoder(strings.NewReader(argsJSON))
	dec.UseNumber()
	if err := dec.Decode(&kv); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range kv {
			if !yield(k) {
				return
			}
		}
	})
	args := make([]string, 0, len(kv))
	for _, k := range keys {
		var v string
		switch x := kv[k].(type) {
		case string:
			v = x
		case json.Number:
			v = x.String()
		case bool:
			v = strconv.FormatBool(x)
		default:
			return nil, fmt.Errorf("argument %q: want a string or a number, got %T", k, x)
		}
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
	}
	return args, nil
}
