package pgbackend

import (
	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/topo"
)

// Wire compression (HCCL_GO_COMPRESSION, option key compression): float32
// Sum/Avg/PreMulSum all_reduces travel as float16 or bfloat16 messages with
// float32 accumulation. It applies to messages between ranks, and across
// hosts only where the algorithm crosses them:
//
//   - single-host communicators run all_reduce in a shared-memory arena,
//     where there is no link to save bytes on: exact;
//   - the hierarchical all_reduce (collectives/hier) keeps its arena
//     phases exact and compresses its inter-host phase only;
//   - the ring (collectives.AllReduceCompressed) follows the topology's
//     ring and compresses every hop.
//
// The cost model, told the wire ratio and the codec's speed, chooses
// between those two; recursive doubling and halving-doubling do not
// compress, so a compressed all_reduce never runs them. Other dtypes and
// ops are never compressed.

// compressedAllReduceAlgos are the all_reduce algorithms that compress.
var compressedAllReduceAlgos = []string{topo.AlgoRing, topo.AlgoHier}

// compression is the communicator's wire compression setting.
func (c *Communicator) compression() collectives.Compression {
	if c.cfg.Compression == "" {
		return collectives.NoCompression
	}
	return c.cfg.Compression
}

// compressionFor is the wire format of an all_reduce of dt under op: the
// communicator's setting when dt and op allow compression, else none.
func (c *Communicator) compressionFor(dt reduce.DType, op reduce.Op) collectives.Compression {
	if comp := c.compression(); comp != collectives.NoCompression && collectives.Compressible(dt, op) {
		return comp
	}
	return collectives.NoCompression
}

// pickAllReduce is pick for an all_reduce of nbytes of dt under op, and
// the wire format it travels as. Compressed, it is the ring along the
// topology or, when the communicator has the arena hierarchy, the
// hierarchy with its inter-host phase compressed, whichever the compressed
// cost model prefers (a forced algorithm other than those two runs as the
// ring). In a single host's arena it is exact.
// The arena hierarchy runs in rounds (roundBytes).
func (c *Communicator) pickAllReduce(stream, nbytes int, dt reduce.DType, op reduce.Op, o collectives.Options) (collectives.Options, collectives.Compression) {
	comp := c.compressionFor(dt, op)
	switch {
	case comp == collectives.NoCompression:
		o = c.pick(stream, topo.OpAllReduce, nbytes, o, allReduceAlgos)
	case stream < 0 || stream >= len(c.streams):
		return o, comp // refused by submitCollective
	case c.arenaFor(stream, o) != nil:
		// One host: the arena, or the NUMA level, exact either way.
		return c.pick(stream, topo.OpAllReduce, nbytes, o, allReduceAlgos), collectives.NoCompression
	default:
		o.Algo = c.topo.chooseCompressed(nbytes, o.Algo, c.hiers[stream] != nil, comp)
		o.RoundBytes = c.roundBytes(stream, topo.OpAllReduce, nbytes, o.Algo, c.topo.modelFor(comp))
	}
	return o, comp
}

// modelFor is the cost model of all_reduces travelling as comp (nil
// without a model).
func (t *topology) modelFor(comp collectives.Compression) *topo.CostModel {
	switch {
	case t == nil:
		return nil
	case comp != collectives.NoCompression && t.compressed != nil:
		return t.compressed
	}
	return t.model
}

// chooseCompressed is choose for a compressed all_reduce: the override
// when it names a compressing algorithm, else the compressed model's
// choice between the ring and the arena hierarchy, else the ring.
func (t *topology) chooseCompressed(nbytes int, override collectives.Algorithm, hier bool, comp collectives.Compression) collectives.Algorithm {
	op := topo.OpAllReduce
	switch {
	case override == collectives.Hier && hier, override == collectives.Ring:
		return override
	case override != collectives.Auto:
		if t != nil {
			t.log.once("compressed/"+string(override), "%s: %s does not compress (HCCL_GO_COMPRESSION=%s): the compressed ring runs instead", op, override, comp)
		}
		return collectives.Ring
	case t == nil || t.compressed == nil:
		return collectives.Ring
	}
	algo, predicted, all, err := t.compressed.ChooseFrom(op, nbytes, compressedAllReduceAlgos)
	if err != nil || (algo == topo.AlgoHier && !hier) {
		return collectives.Ring
	}
	a := collectives.Algorithm(algo)
	if t.log.enabled() {
		t.log.once("choice/"+op+"+"+string(comp)+"/"+algo, "%s of %s, %s on the wire: %s, predicted %s (%s)%s", op, topo.FormatBytes(int64(nbytes)), comp, algo,
			topo.FormatDuration(predicted), formatPredictions(all), t.ringNote(a))
	}
	return a
}

// compressedModel is the cost model of compressed all_reduces: model with
// 16-bit floats on the wire, encoded and decoded at codecBW bytes of
// float32 per second. Nil without a model or compression.
func compressedModel(model *topo.CostModel, comp collectives.Compression, codecBW float64) (*topo.CostModel, error) {
	if model == nil || comp == collectives.NoCompression || comp == "" {
		return nil, nil
	}
	return model.Compressed(collectives.WireRatio, codecBW)
}
