package pgbackend

import (
	"context"
	"slices"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport"
)

// The collectives that the topology routes, when they run as messages (not
// in a single host's shared-memory arena): the cost model (or
// HCCL_GO_ALGO) picks the algorithm, rings and chains follow the
// topology's ring, hierarchical algorithms its groups.

// Algorithms implemented per op, as the cost model names them.
func allReduceAlgos() []string {
	return []string{topo.AlgoRing, topo.AlgoHD, topo.AlgoRD, topo.AlgoHier}
}

// movementAlgos are all_gather's and reduce_scatter's.
func movementAlgos() []string { return []string{topo.AlgoRing, topo.AlgoHier} }

func broadcastAlgos() []string { return []string{topo.AlgoChain, topo.AlgoTree, topo.AlgoHier} }

func (c *Communicator) allReduce(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o collectives.Options) error {
	switch o.Algo = c.topo.choose(topo.OpAllReduce, len(send), o.Algo, allReduceAlgos()); o.Algo {
	case collectives.Hier:
		return collectives.HierAllReduce(ctx, c.ep, tag, send, recv, dt, op, c.topo.hier, o)
	case collectives.Ring:
		return collectives.OrderedAllReduce(ctx, c.ep, tag, send, recv, dt, op, c.topo.ringOrder(c.size), o)
	default:
		return collectives.AllReduce(ctx, c.ep, tag, send, recv, dt, op, o)
	}
}

func (c *Communicator) allGather(ctx context.Context, tag transport.Tag, send, recv []byte, o collectives.Options) error {
	switch o.Algo = c.topo.choose(topo.OpAllGather, len(recv), o.Algo, movementAlgos()); o.Algo {
	case collectives.Hier:
		return collectives.HierAllGather(ctx, c.ep, tag, send, recv, c.topo.hier, o)
	default:
		return collectives.OrderedAllGather(ctx, c.ep, tag, send, recv, c.topo.ringOrder(c.size), o)
	}
}

func (c *Communicator) reduceScatter(ctx context.Context, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, o collectives.Options) error {
	switch o.Algo = c.topo.choose(topo.OpReduceScatter, len(send), o.Algo, movementAlgos()); o.Algo {
	case collectives.Hier:
		return collectives.HierReduceScatter(ctx, c.ep, tag, send, recv, dt, op, c.topo.hier, o)
	default:
		return collectives.OrderedReduceScatter(ctx, c.ep, tag, send, recv, dt, op, c.topo.ringOrder(c.size), o)
	}
}

func (c *Communicator) broadcast(ctx context.Context, tag transport.Tag, send, recv []byte, root int, o collectives.Options) error {
	switch o.Algo = c.topo.choose(topo.OpBroadcast, len(recv), o.Algo, broadcastAlgos()); o.Algo {
	case collectives.Hier:
		return collectives.HierBroadcast(ctx, c.ep, tag, send, recv, root, c.topo.hier, o)
	default:
		return collectives.OrderedBroadcast(ctx, c.ep, tag, send, recv, root, c.topo.ringOrder(c.size), o)
	}
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
	if override == collectives.Hier && t.hier.Groups == nil {
		t.log.once("nohier/"+op, "%s: HCCL_GO_ALGO=hier but the topology has no hierarchy (one host, or groups of unequal size): choosing automatically", op)
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
// "reducescatter" or "broadcast". A single host's shared-memory arena, when
// there is one, takes precedence over all of these.
func (c *Communicator) ChooseAlgorithm(op string, nbytes int) (string, error) {
	op, err := topo.NormalizeOp(op)
	if err != nil {
		return "", err
	}
	implemented := map[string][]string{
		topo.OpAllReduce: allReduceAlgos(), topo.OpAllGather: movementAlgos(),
		topo.OpReduceScatter: movementAlgos(), topo.OpBroadcast: broadcastAlgos(),
	}[op]
	a := c.topo.choose(op, nbytes, c.cfg.AlgoFor(op), implemented)
	if a == collectives.Auto {
		return "auto", nil
	}
	return string(a), nil
}
