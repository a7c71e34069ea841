// Command hccl-go-topo inspects topologies and simulates collectives on
// the cost model of package topo.
//
//	hccl-go-topo simulate --hosts 1024 --ranks-per-host 8 --size 1GiB --inter-bw 200Gbit --intra-bw 100GB
//	hccl-go-topo simulate --topo-file topo.json --size 64MiB --op allreduce
//	hccl-go-topo ring topo.json
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hccl-go/hccl-go/topo"
)

const usage = `usage:
  hccl-go-topo simulate [flags]   predict each algorithm's time, algbw and busbw
  hccl-go-topo ring FILE          the ring, hierarchy groups and links of a topology file

simulate flags:
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stderr, usage+topo.SimUsage())
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
	case "ring":
		if len(args) != 2 {
			return fmt.Errorf("ring: want one topology file, got %d arguments", len(args)-1)
		}
		return describe(args[1], out)
	case "-h", "--help", "help":
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown command %q (want simulate or ring; -h for help)", args[0])
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
