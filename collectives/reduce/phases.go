package reduce

// Phases splits a reduction that runs in several phases (inside hosts,
// then across them) into the op of its first phase, which applies the
// pre-multiplication, and the op of the later phases, which combine
// partial results: Avg sums in every phase (the caller divides once at the
// end), PreMulSum scales in the first phase and then sums; every other op
// is itself in every phase.
func Phases(op Op) (first, later Op) {
	switch op {
	case Avg:
		return Sum, Sum
	case PreMulSum:
		return PreMulSum, Sum
	default:
		return op, op
	}
}
