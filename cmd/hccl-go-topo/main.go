// Command hccl-go-topo inspects topologies and simulates collectives on
// the cost model of package topo.
//
//	hccl-go-topo simulate --hosts 1024 --ranks-per-host 8 --size 1GiB --inter-bw 200Gbit --intra-bw 100GB
//	hccl-go-topo simulate --topo-file topo.json --size 64MiB --op allreduce
//	hccl-go-topo ring topo.json
//	hccl-go-topo scale --hosts 2048 --ranks-per-host 8
//	hccl-go-topo check bench/results/2026-12-03/sim-check/*.json
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hccl-go/hccl-go/topo"
)

const usage = `usage:
  hccl-go-topo simulate [flags]   predict each algorithm's time, algbw and busbw
  hccl-go-topo ring FILE          the ring, hierarchy groups and links of a topology file
  hccl-go-topo scale [flags]      init time, sockets, descriptors and memory per rank of a cluster
  hccl-go-topo check [--json] [--lazy-links=0|1|auto] RUN.json...
                                  both models against scale runs (scripts/scale.sh --json):
                                  measured, model and measured/model per figure; --lazy-links:
                                  HCCL_GO_LAZY_LINKS of records that do not say (default 0)

simulate flags:
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stderr, usage+topo.SimUsage()+"\nscale flags:\n"+topo.ScaleUsage())
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "hccl-go-topo:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return flag.ErrHelp
	}
	switch args[0] {
	case "simulate":
		cfg, err := topo.ParseSimArgs(args[1:])
		if err != nil {
			return err
		}
		res, err := topo.Simulate(cfg)
		if err != nil {
			return err
		}
		fmt.Fprint(out, res.Table())
		fmt.Fprintf(out, "(model evaluated in %v)\n", res.Elapsed.Round(time.Microsecond))
		return nil
	case "scale":
		cfg, err := topo.ParseScaleArgs(args[1:])
		if err != nil {
			return err
		}
		res, err := topo.ScaleModel(cfg)
		if err != nil {
			return err
		}
		fmt.Fprint(out, res.Table())
		return nil
	case "check":
		return check(args[1:], out)
	case "ring":
		if len(args) != 2 {
			return fmt.Errorf("ring: want one topology file, got %d arguments", len(args)-1)
		}
		return describe(args[1], out)
	case "-h", "--help", "help":
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown command %q (want simulate, ring, scale or check; -h for help)", args[0])
}

// describe prints what the library derives from a topology file.
func describe(path string, out io.Writer) error {
	g, err := topo.Load(path)
	if err != nil {
		return err
	}
	start := time.Now()
	m, err := topo.NewCostModel(g, topo.Params{})
	if err != nil {
		return err
	}
	fmt.Fprint(out, m.Summary())
	fmt.Fprintf(out, "(ring and groups found in %v)\n", time.Since(start).Round(time.Microsecond))
	return nil
}

// check compares the models with the scale runs named in args.
func check(args []string, out io.Writer) error {
	asJSON, lazy := false, "0"
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		switch {
		case args[0] == "--json":
			asJSON = true
		case strings.HasPrefix(args[0], "--lazy-links="):
			lazy = strings.TrimPrefix(args[0], "--lazy-links=")
		default:
			return fmt.Errorf("check: unknown flag %s (want --json, --lazy-links=0|1|auto)", args[0])
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("check: want one or more scale run records (scripts/scale.sh N --json OUT)")
	}
	data := make([][]byte, len(args))
	for i, path := range args {
		var err error
		if data[i], err = os.ReadFile(path); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	res, err := topo.CheckRuns(args, data, lazy)
	if err != nil {
		return err
	}
	if asJSON {
		b, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
	fmt.Fprint(out, res.Table())
	return nil
}
