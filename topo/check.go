package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// The check of the models against scale runs: the JSON that
// bench/scale/report.py --json writes (scripts/scale.sh N --json OUT), read
// here by CheckRuns. For each run it compares
//
//   - the scale model (ScaleModel) with the sockets, descriptors and private
//     memory each rank had after init, and its init CPU with the CPU the
//     init call took (getrusage), and the job's init time on this machine
//     (every rank's CPU on the machine's cores) with the measured one;
//   - the cost model with every op time the run recorded (SCALE_TIME_SIZES):
//     rebuilt as the library built it (the topology the first communicator
//     learned and dumped, the local speeds it measured, from comm info), it
//     predicts each forced algorithm, and for the library's own choice
//     ("auto") the algorithm it chooses; the error is measured / model.
//
// Ranks that outnumber the cores share them: the oversubscription N/cores
// is printed beside every figure, since op times then include waiting for
// a peer to be scheduled, which neither model costs.

// scaleRecord is the part of report.py's JSON the check reads.
type scaleRecord struct {
	Summary struct {
		NRanks       int                              `json:"nranks"`
		RanksPerHost int                              `json:"ranks_per_host"`
		API          string                           `json:"api"`
		LazyLinks    string                           `json:"lazy_links"`
		InitCall     [2]float64                       `json:"init_call_s"`
		CPUInit      *[2]float64                      `json:"cpu_init_s"`
		Cores        int                              `json:"cores"`
		SmallAR      [2]float64                       `json:"small_all_reduce_us"`
		PerRank      map[string]map[string][2]float64 `json:"per_rank"`
		OpTimes      []opTime                         `json:"op_times"`
		Infos        map[string]struct {
			Model *struct {
				Source    string  `json:"source"`
				ReduceBW  float64 `json:"reduce_bw"`
				CopyBW    float64 `json:"copy_bw"`
				ArenaHier bool    `json:"arena_hier"`
			} `json:"model"`
		} `json:"infos"`
		Topology *Graph `json:"topology"`
	} `json:"summary"`
}

type opTime struct {
	Config string  `json:"config"`
	Op     string  `json:"op"`
	Algo   string  `json:"algo"`
	Bytes  int     `json:"bytes"`
	US     float64 `json:"us"`
	// USMin is the best call's (absent in older records: 0).
	USMin float64 `json:"us_min"`
}

// CheckRow is one compared figure.
type CheckRow struct {
	Run      string  `json:"run"`
	Ranks    int     `json:"ranks"`
	Layout   string  `json:"layout"`
	Kind     string  `json:"kind"` // "op" or "scale"
	What     string  `json:"what"`
	Op       string  `json:"op,omitempty"`
	Algo     string  `json:"algo,omitempty"`
	Bytes    int     `json:"bytes,omitempty"`
	Measured float64 `json:"measured"`
	Model    float64 `json:"model"`
	Unit     string  `json:"unit"`
	// Ratio is measured / model; BestRatio the best call's / model (op
	// times with the best call recorded).
	Ratio     float64 `json:"ratio"`
	BestRatio float64 `json:"best_ratio,omitempty"`
	// Oversubscription is ranks / cores of the run.
	Oversubscription float64 `json:"oversubscription"`
	Note             string  `json:"note,omitempty"`
}

// CheckResult is every row and a summary per run.
type CheckResult struct {
	Rows    []CheckRow `json:"rows"`
	Summary []string   `json:"summary"`
}

// probeMaxRanks is the most ranks the library probes the links of at init
// when they span hosts (pgbackend probeMaxAuto).
const probeMaxRanks = 16

// defaultCores is assumed for runs that did not record their cores (the
// machine these runs were made on).
const defaultCores = 2

// CheckRuns checks the models against the runs (name and JSON of each).
// lazyLinks is HCCL_GO_LAZY_LINKS for records that do not say ("0" for
// those made before lazy links existed).
func CheckRuns(names []string, data [][]byte, lazyLinks string) (CheckResult, error) {
	var res CheckResult
	recs := make([]scaleRecord, len(data))
	for i, d := range data {
		if err := json.Unmarshal(d, &recs[i]); err != nil {
			return res, fmt.Errorf("check: %s: %w", names[i], err)
		}
		if recs[i].Summary.NRanks < 2 || recs[i].Summary.RanksPerHost < 1 {
			return res, fmt.Errorf("check: %s: not a scale run record (no nranks, ranks_per_host)", names[i])
		}
		if recs[i].Summary.LazyLinks == "" {
			recs[i].Summary.LazyLinks = lazyLinks
		}
	}
	for i, rec := range recs {
		rows, sum, err := checkRun(names[i], rec)
		if err != nil {
			return res, fmt.Errorf("check: %s: %w", names[i], err)
		}
		res.Rows = append(res.Rows, rows...)
		res.Summary = append(res.Summary, sum...)
	}
	return res, nil
}

func checkRun(name string, rec scaleRecord) ([]CheckRow, []string, error) {
	s := rec.Summary
	n, k := s.NRanks, min(s.RanksPerHost, s.NRanks)
	hosts := (n + k - 1) / k
	cores := s.Cores
	if cores == 0 {
		cores = defaultCores
	}
	over := float64(n) / float64(cores)
	layout := fmt.Sprintf("%dx%d", hosts, k)
	row := func(kind, what, unit string, measured, model float64) CheckRow {
		r := CheckRow{Run: name, Ranks: n, Layout: layout, Kind: kind, What: what, Unit: unit,
			Measured: measured, Model: model, Oversubscription: over}
		switch {
		case model > 0:
			r.Ratio = measured / model
		case measured == 0:
			r.Ratio = 1 // both none
		}
		return r
	}
	var rows []CheckRow
	var summary []string
	if s.API == "C API" && hosts*k == n {
		cfg := DefaultScaleConfig(hosts, k)
		cfg.LazyLinks = s.LazyLinks
		m, err := ScaleModel(cfg)
		if err != nil {
			return nil, nil, err
		}
		// The model's rank is the one with the most links (a lazy ring
		// crosses hosts at some ranks only): the max over ranks.
		init := s.PerRank["after_init"]
		mode := "links at init"
		if m.Lazy {
			mode = "lazy links"
		}
		rows = append(rows,
			row("scale", "sockets per rank (max), "+mode, "", init["sockets"][1], float64(m.Sockets)),
			row("scale", "fds per rank (max)", "", init["fds"][1], float64(m.FDs)))
		// The library probes the links of 16 ranks or fewer on several
		// hosts (HCCL_GO_TOPO_PROBE=auto): CPU, buffers and time the model
		// leaves out.
		probed := ""
		if n <= probeMaxRanks && hosts > 1 {
			probed = "with link probing, which the model leaves out"
		}
		timed := []CheckRow{row("scale", "private memory added by init", "MB", init["anon_kb_added"][0]*1024/1e6, float64(m.PrivateInit)/1e6)}
		if s.CPUInit != nil {
			timed = append(timed, row("scale", "init CPU per rank", "ms", s.CPUInit[0]*1e3, m.RankInitCPU*1e3))
		}
		here, _ := ScaleHere(m, cores)
		timed = append(timed, row("scale", fmt.Sprintf("init wall here (N x CPU / %d cores)", cores), "s", s.InitCall[1], here.Seconds()))
		for i := range timed {
			timed[i].Note = probed
		}
		rows = append(rows, timed...)
	}
	if len(s.OpTimes) == 0 {
		return rows, summary, nil
	}
	if s.Topology == nil {
		return nil, nil, errors.New("op times without the topology the run learned (topo.json)")
	}
	opRows, err := checkOps(s.Topology, rec, row)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows, opRows...)
	summary = append(summary, opSummary(name, layout, over, opRows)...)
	return rows, summary, nil
}

// implementedAlgos are the algorithms the library runs per op
// (pgbackend/topology_ops.go), among which it chooses.
var implementedAlgos = map[string][]string{
	OpAllReduce: {AlgoRing, AlgoHD, AlgoRD, AlgoHier}, OpAllGather: {AlgoRing, AlgoHier},
	OpReduceScatter: {AlgoRing, AlgoHier}, OpBroadcast: {AlgoChain, AlgoTree, AlgoHier},
}

func checkOps(g *Graph, rec scaleRecord, row func(kind, what, unit string, measured, model float64) CheckRow) ([]CheckRow, error) {
	models := map[string]*CostModel{}
	var rows []CheckRow
	for _, t := range rec.Summary.OpTimes {
		m := models[t.Config]
		if m == nil {
			info, ok := rec.Summary.Infos[t.Config]
			if !ok || info.Model == nil {
				return nil, fmt.Errorf("config %q: no cost model inputs in comm info", t.Config)
			}
			p := Params{ReduceBandwidth: info.Model.ReduceBW, CopyBandwidth: info.Model.CopyBW, ArenaHier: info.Model.ArenaHier}
			var err error
			if m, err = NewCostModel(g, p); err != nil {
				return nil, fmt.Errorf("config %q: %w", t.Config, err)
			}
			models[t.Config] = m
		}
		op, err := NormalizeOp(t.Op)
		if err != nil {
			return nil, err
		}
		algo, what := t.Algo, "op time"
		var pred time.Duration
		if algo == "auto" {
			algo, pred, _, err = m.ChooseFrom(op, t.Bytes, implementedAlgos[op])
			what = "op time, the library's choice"
		} else {
			pred, err = m.Predict(op, algo, t.Bytes)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s %d B: %w", op, t.Algo, t.Bytes, err)
		}
		r := row("op", what, "us", t.US, pred.Seconds()*1e6)
		r.Op, r.Algo, r.Bytes = op, algo, t.Bytes
		if t.USMin > 0 && pred > 0 {
			r.BestRatio = t.USMin / (pred.Seconds() * 1e6)
		}
		rows = append(rows, r)
	}
	// The library's choice against the forced algorithms' measurements at
	// the same op and size: right when the one it chose measured within 10%
	// of the fastest (its own "auto" run is another sample of the same).
	type key struct {
		op    string
		bytes int
	}
	forced := map[key]map[string]float64{}
	for _, r := range rows {
		if r.What == "op time" {
			if forced[key{r.Op, r.Bytes}] == nil {
				forced[key{r.Op, r.Bytes}] = map[string]float64{}
			}
			forced[key{r.Op, r.Bytes}][r.Algo] = r.Measured
		}
	}
	for i, r := range rows {
		times := forced[key{r.Op, r.Bytes}]
		if r.What == "op time" || len(times) == 0 {
			continue
		}
		best, bestUS := "", math.Inf(1)
		for a, us := range times {
			if us < bestUS || (us == bestUS && a < best) {
				best, bestUS = a, us
			}
		}
		mine, ok := times[r.Algo]
		switch {
		case !ok:
			rows[i].Note = "its choice was not forced in this run"
		case mine <= 1.1*bestUS:
			rows[i].Note = fmt.Sprintf("choice right: forced %s %.0f us, fastest forced %s %.0f us", r.Algo, mine, best, bestUS)
		default:
			rows[i].Note = fmt.Sprintf("choice wrong: forced %s %.0f us, fastest forced %s %.0f us (%.2fx)", r.Algo, mine, best, bestUS, mine/bestUS)
		}
	}
	return rows, nil
}

// opSummary is the geometric mean and range of measured/model per run,
// for small (64 KiB or less: latency) and large ops, and how often the
// library's choice was right.
func opSummary(name, layout string, over float64, rows []CheckRow) []string {
	var small, large, bestSmall, bestLarge []float64
	right, choices := 0, 0
	for _, r := range rows {
		if r.Ratio > 0 && r.What == "op time" {
			if r.Bytes <= 64<<10 {
				small = append(small, math.Log(r.Ratio))
				if r.BestRatio > 0 {
					bestSmall = append(bestSmall, math.Log(r.BestRatio))
				}
			} else {
				large = append(large, math.Log(r.Ratio))
				if r.BestRatio > 0 {
					bestLarge = append(bestLarge, math.Log(r.BestRatio))
				}
			}
		}
		if r.What != "op time" {
			choices++
			if strings.HasPrefix(r.Note, "choice right") {
				right++
			}
		}
	}
	out := []string{fmt.Sprintf("%s (%s, %.0fx oversubscribed), measured/model of forced algorithms (median call): up to 64 KiB %s; above %s; the library's choice right in %d of %d",
		name, layout, over, logStats(small), logStats(large), right, choices)}
	if len(bestSmall)+len(bestLarge) > 0 {
		out = append(out, fmt.Sprintf("%s (%s), best call/model: up to 64 KiB %s; above %s", name, layout, logStats(bestSmall), logStats(bestLarge)))
	}
	return out
}

// logStats is the count, geometric mean and range of ratios given as logs.
func logStats(logs []float64) string {
	if len(logs) == 0 {
		return "none"
	}
	sort.Float64s(logs)
	mean := 0.0
	for _, l := range logs {
		mean += l
	}
	return fmt.Sprintf("%d, geometric mean %.2f, range %.2f-%.2f", len(logs), math.Exp(mean/float64(len(logs))), math.Exp(logs[0]), math.Exp(slices.Max(logs)))
}

// Table writes the rows for people.
func (c CheckResult) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# measured against the model (ratio = measured / model; over = ranks / cores)\n")
	last := ""
	for _, r := range c.Rows {
		if r.Run != last {
			fmt.Fprintf(&b, "\n## %s: %d ranks as %s (hosts x ranks), %.1fx oversubscribed\n", r.Run, r.Ranks, r.Layout, r.Oversubscription)
			last = r.Run
		}
		if r.Kind == "scale" {
			fmt.Fprintf(&b, "  %-46s measured %10.3f  model %10.3f %-3s ratio %6.2f  %s\n", r.What, r.Measured, r.Model, r.Unit, r.Ratio, r.Note)
			continue
		}
		best := ""
		if r.BestRatio > 0 {
			best = fmt.Sprintf(" (best call %5.2f)", r.BestRatio)
		}
		fmt.Fprintf(&b, "  %-14s %-5s %10s  measured %10.1f us  model %10.1f us  ratio %6.2f%s  %s\n",
			r.Op, r.Algo, FormatBytes(int64(r.Bytes)), r.Measured, r.Model, r.Ratio, best, r.Note)
	}
	if len(c.Summary) > 0 {
		fmt.Fprintf(&b, "\n# summary\n")
		for _, s := range c.Summary {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return b.String()
}
