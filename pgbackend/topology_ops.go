package pgbackend

import (
	"context"
	"slices"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport"
)

// The collectives that the topology routes, when they do not run whole in
// a single host's shared-memory arena: the cost model (or HCCL_GO_ALGO)
// picks the algorithm when the op is issued (pick), rings and chains
// follow the topology's ring, hierarchical algorithms (collectives/hier,
// one exchange across groups) its groups: a phase inside each group in
// the host's arena where its ranks share one, as messages otherwise.

// Algorithms implemented per op, as the cost model names them (read only:
// ops pass them on every call).
var (
	allReduceAlgos = []string{topo.AlgoRing, topo.AlgoHD, topo.AlgoRD, topo.AlgoHier}
	// movementAlgos are all_gather's and reduce_scatter's.
	movementAlgos  = []string{topo.AlgoRing, topo.AlgoHier}
	broadcastAlgos = []string{topo.AlgoChain, topo.AlgoTree, topo.AlgoHier}
)

// pick sets o.Algo to the algorithm of an op of nbytes (counted as the
// cost model counts them) that does not run whole in the stream's arena,
// when it is issued: the same on every rank. A stream out of range is
// left for submitCollective to refuse.
//
// With the NUMA level (numa.go) the op may take it instead: on one host
// where the model predicts it faster than the whole op in the host's arena
// (otherwise the arena runs it, as without the level), across hosts as one
// more algorithm to choose from.
func (c *Communicator) pick(stream int, op string, nbytes int, o collectives.Options, implemented []string) collectives.Options {
	if stream < 0 || stream >= len(c.streams) {
		return o
	}
	o = c.dropNUMA(stream, op, o)
	numa := c.numaFits(stream, op, nbytes)
	if c.arenaFor(stream, o) != nil {
		if numa && o.Algo == collectives.Auto && c.topo.choose(op, nbytes, o.Algo, []string{topo.AlgoShm, topo.AlgoNUMA}) == algoNUMA {
			o.Algo, o.RoundBytes = algoNUMA, c.topo.numaRounds(op, nbytes)
		}
		return o
	}
	if numa {
		implemented = append(slices.Clip(implemented), topo.AlgoNUMA)
	}
	if c.noHierOn(stream) {
		implemented = slices.DeleteFunc(slices.Clone(implemented), func(a string) bool { return a == topo.AlgoHier })
		if o.Algo == collectives.Hier {
			c.topo.log.once("nohier/stream/"+op, "%s: HCCL_GO_ALGO=hier but this group's hierarchy runs on its default stream only: choosing automatically", op)
			o.Algo = collectives.Auto
		}
	}
	o.Algo = c.topo.choose(op, nbytes, o.Algo, implemented)
	o.RoundBytes = c.roundBytes(stream, op, nbytes, o.Algo, c.topo.modelFor(collectives.NoCompression))
	return o
}

// noHierOn says whether stream lacks the hierarchy that the
// communicator's topology has: a split across hosts has it on its default
// stream only (split_hier.go).
func (c *Communicator) noHierOn(stream int) bool {
	return c.topo != nil && c.topo.groups != nil && c.hiers[stream] == nil
}

// roundBytes is Options.RoundBytes of an op of nbytes running as algo on
// stream: the arena hierarchy (collectives/hier) runs all_reduce and
// all_gather in rounds when model predicts their inter-host phase to
// dominate their arena phases (topo.CostModel.ArenaRounds); 0 otherwise.
// The NUMA level's rounds come from its own model.
func (c *Communicator) roundBytes(stream int, op string, nbytes int, algo collectives.Algorithm, model *topo.CostModel) int {
	switch {
	case algo == algoNUMA && c.numa.on(stream):
		return c.topo.numaRounds(op, nbytes)
	case algo != collectives.Hier || model == nil || c.hiers[stream] == nil:
		return 0
	}
	return model.ArenaRounds(op, nbytes)
}

// pickReduce is pick for reduce, which the cost model does not cover: the
// NUMA level where an all_reduce of the same size would take it (a reduce
// moves what an all_reduce's reduce-scatter and gather to one rank do),
// else the hierarchy whenever the stream has one (it crosses between
// groups once per group), else the override, else the collectives' own
// choice.
func (c *Communicator) pickReduce(stream, nbytes int, o collectives.Options) collectives.Options {
	if stream >= 0 && stream < len(c.streams) {
		o = c.dropNUMA(stream, "reduce", o)
		if o.Algo == collectives.Auto && c.numa.on(stream) && c.pick(stream, topo.OpAllReduce, nbytes, o, allReduceAlgos).Algo == algoNUMA {
			o.Algo = algoNUMA
		}
	}
	switch {
	case o.Algo == algoNUMA:
	case stream < 0 || stream >= len(c.streams) || c.arenaFor(stream, o) != nil:
	case c.hiers[stream] != nil && (o.Algo == collectives.Auto || o.Algo == collectives.Hier):
		o.Algo = collectives.Hier
	case o.Algo == collectives.Hier:
		if c.topo != nil {
			c.topo.log.once("nohier/reduce", "reduce: HCCL_GO_ALGO=hier but this stream has no hierarchy: choosing automatically")
		}
		o.Algo = collectives.Auto
	}
	return o
}

// allReduce runs an all_reduce as messages (the hierarchy's included), its
// inter-host bytes travelling as comp: only the ring and the hierarchy
// compress, and pickAllReduce chooses no other under compression.
func (c *Communicator) allReduce(ctx context.Context, stream int, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, comp collectives.Compression, o collectives.Options) error {
	h := c.hiers[stream]
	switch {
	case o.Algo == algoNUMA:
		n := c.numa.hiers[stream]
		err := n.AllReduce(ctx, tag, send, recv, dt, op, o.PreMul, o)
		c.stats.addTimes(ctx, n.LastTimes())
		return err
	case o.Algo == collectives.Hier && h != nil:
		err := h.AllReduceCompressed(ctx, tag, send, recv, dt, op, o.PreMul, comp, o)
		c.stats.addTimes(ctx, h.LastTimes())
		return err
	case comp != collectives.NoCompression:
		o.Algo = collectives.Ring
		return collectives.OrderedAllReduceCompressed(ctx, c.ep, tag, send, recv, dt, op, comp, c.topo.ringOrder(c.size), o)
	case o.Algo == collectives.Ring:
		return collectives.OrderedAllReduce(ctx, c.ep, tag, send, recv, dt, op, c.topo.ringOrder(c.size), o)
	default:
		return collectives.AllReduce(ctx, c.ep, tag, send, recv, dt, op, o)
	}
}

func (c *Communicator) allGather(ctx context.Context, stream int, tag transport.Tag, send, recv []byte, o collectives.Options) error {
	if o.Algo == algoNUMA {
		n := c.numa.hiers[stream]
		err := n.AllGather(ctx, tag, send, recv, o)
		c.stats.addTimes(ctx, n.LastTimes())
		return err
	}
	h := c.hiers[stream]
	if o.Algo != collectives.Hier || h == nil {
		return collectives.OrderedAllGather(ctx, c.ep, tag, send, recv, c.topo.ringOrder(c.size), o)
	}
	err := h.AllGather(ctx, tag, send, recv, o)
	c.stats.addTimes(ctx, h.LastTimes())
	return err
}

func (c *Communicator) reduceScatter(ctx context.Context, stream int, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o collectives.Options) error {
	if o.Algo == algoNUMA {
		n := c.numa.hiers[stream]
		err := n.ReduceScatter(ctx, tag, send, recv, dt, op, o.PreMul)
		c.stats.addTimes(ctx, n.LastTimes())
		return err
	}
	h := c.hiers[stream]
	if o.Algo != collectives.Hier || h == nil {
		return collectives.OrderedReduceScatter(ctx, c.ep, tag, send, recv, dt, op, c.topo.ringOrder(c.size), o)
	}
	err := h.ReduceScatter(ctx, tag, send, recv, dt, op, o.PreMul)
	c.stats.addTimes(ctx, h.LastTimes())
	return err
}

func (c *Communicator) broadcast(ctx context.Context, stream int, tag transport.Tag, send, recv []byte, root int, o collectives.Options) error {
	if o.Algo == algoNUMA {
		return c.numa.hiers[stream].Broadcast(ctx, tag, send, recv, root, o)
	}
	if h := c.hiers[stream]; o.Algo == collectives.Hier && h != nil {
		return h.Broadcast(ctx, tag, send, recv, root, o)
	}
	return collectives.OrderedBroadcast(ctx, c.ep, tag, send, recv, root, c.topo.ringOrder(c.size), o)
}

// choose is the algorithm of one op: the override when one is set (a
// hierarchical override without a hierarchy falls back to the automatic
// choice, with a warning), else the cost model's choice among implemented,
// else Auto (the collectives' own size thresholds). The same on every rank:
// it depends on the shared model, the op and the size only.
func (t *topology) choose(op string, nbytes int, override collectives.Algorithm, implemented []string) collectives.Algorithm {
	if t == nil {
		if override == collectives.Hier {
			return collectives.Auto
		}
		return override
	}
	if override == collectives.Hier && t.groups == nil {
		t.log.once("nohier/"+op, "%s: HCCL_GO_ALGO=hier but the topology has no hierarchy (one host, no host shared, or hosts of unequal size without shared-memory arenas): choosing automatically", op)
		override = collectives.Auto
	}
	if override != collectives.Auto {
		t.log.once("override/"+op+"/"+string(override), "%s: %s (HCCL_GO_ALGO)%s", op, override, t.ringNote(override))
		return override
	}
	if t.model == nil {
		return collectives.Auto
	}
	algo, predicted, all, err := t.model.ChooseFrom(op, nbytes, implemented)
	if err != nil {
		return collectives.Auto // an op the model does not cover
	}
	a := collectives.Algorithm(algo)
	if t.log.enabled() {
		t.log.once("choice/"+op+"/"+algo, "%s of %s: %s, predicted %s (%s)%s", op, topo.FormatBytes(int64(nbytes)), algo,
			topo.FormatDuration(predicted), formatPredictions(all), t.ringNote(a))
	}
	return a
}

// ringOrder is the order of ring and chain algorithms (rank order without
// a topology).
func (t *topology) ringOrder(n int) []int {
	if t == nil {
		return identity(n)
	}
	return t.ring
}

func (t *topology) ringNote(a collectives.Algorithm) string {
	if (a != collectives.Ring && a != collectives.Chain) || slices.Equal(t.ring, identity(len(t.ring))) {
		return ""
	}
	return " along ring " + formatInts(t.ring)
}

// ChooseAlgorithm names the algorithm an op of nbytes (counted as the cost
// model counts them: see topo.OpAllReduce) takes when it runs as messages:
// the HCCL_GO_ALGO override, else the cost model's choice, else "auto"
// (the collectives' size thresholds). op is "allreduce", "allgather",
// "reducescatter" or "broadcast". With compression (HCCL_GO_COMPRESSION)
// an all_reduce is taken as one that compresses (float32 sum): the ring or
// the hierarchy. A single host's shared-memory arena, when there is one,
// takes precedence over all of these; with the NUMA level (numa.go) the
// answer is "numa" where the level runs the op, and on one host "shm"
// where the host's arena does.
func (c *Communicator) ChooseAlgorithm(op string, nbytes int) (string, error) {
	op, err := topo.NormalizeOp(op)
	if err != nil {
		return "", err
	}
	if comp := c.compression(); op == topo.OpAllReduce && comp != collectives.NoCompression {
		return string(c.topo.chooseCompressed(nbytes, c.cfg.AlgoFor(op), c.hiers[0] != nil, comp)), nil
	}
	implemented := map[string][]string{
		topo.OpAllReduce: allReduceAlgos, topo.OpAllGather: movementAlgos,
		topo.OpReduceScatter: movementAlgos, topo.OpBroadcast: broadcastAlgos,
	}[op]
	if c.numa.on(StreamDefault) {
		// The NUMA level, or on one host the whole op in its arena.
		o := c.pick(StreamDefault, op, nbytes, c.options(op, 0), implemented)
		switch {
		case o.Algo == algoNUMA:
			return string(algoNUMA), nil
		case c.arenaFor(StreamDefault, o) != nil:
			return topo.AlgoShm, nil
		}
	}
	a := c.topo.choose(op, nbytes, c.cfg.AlgoFor(op), implemented)
	if a == collectives.Auto {
		return "auto", nil
	}
	return string(a), nil
}
