package reduce

// Reduce3DupDivide computes dst[i] = a[i] op b[i], divides it by divisor
// for the last step of an Avg (divisor <= 1: no division), and writes the
// same values into dup, with the semantics of Reduce3. dst and dup may each
// alias a or b exactly (not partially overlap them), but not each other.
// The C kernel works a few KiB at a time and copies each block into dup
// while it is still in the L1 cache, which is cheaper than Reduce3 followed
// by a copy of the whole result. Each result equals what Reduce3, DivideBy
// and a copy give, bit for bit.
func Reduce3DupDivide(dt DType, op Op, dst, dup, a, b []byte, divisor int) {
	if Check(dt, op) != nil {
		return
	}
	if useC(dt, len(dst)) && cReduceDupDivide(dt, op, dst, dup, a, b, divisor) {
		return
	}
	n := common(dt.Size(), dst, dup, a, b) * dt.Size()
	Reduce3(dt, op, dst[:n], a[:n], b[:n])
	if divisor > 1 {
		DivideBy(dt, dst[:n], divisor)
	}
	copy(dup[:n], dst[:n])
}
