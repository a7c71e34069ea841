package reduce

// Reduce3Dup computes dst[i] = a[i] op b[i] and writes the same values into
// dup, with the semantics of Reduce3. dst and dup may each alias a or b
// exactly (not partially overlap them), but not each other. The C kernel reduces a few KiB at a time
// and copies each block into dup while it is still in the L1 cache, which
// is cheaper than Reduce3 followed by a copy of the whole result.
func Reduce3Dup(dt DType, op Op, dst, dup, a, b []byte) {
	if Check(dt, op) != nil {
		return
	}
	if useC(dt, len(dst)) && cReduceDup(dt, op, dst, dup, a, b) {
		return
	}
	n := common(dt.Size(), dst, dup, a, b) * dt.Size()
	reduceGo(dt, op, dst[:n], a[:n], b[:n])
	copy(dup[:n], dst[:n])
}
