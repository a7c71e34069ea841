package arena

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStampsTravelWithTheFlag: each rank stamps the first epoch of every
// operation (operations of one and of two epochs alternate, so both
// parities carry stamps); after the wait, every peer's stamp of that epoch
// is the one it posted, and the inline payload beside it is intact.
func TestStampsTravelWithTheFlag(t *testing.T) {
	const p, ops = 3, 100
	arenas := connectAll(t, p, testConfig(shmDir(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stamp := func(i int, op uint64) Stamp { return Stamp{Op: op, Seq: uint64(i), Size: ^op} }
	errs := make([]error, p)
	var wg sync.WaitGroup
	for i, a := range arenas {
		wg.Go(func() {
			for op := range uint64(ops) {
				errs[i] = runStampedOp(ctx, a, op, stamp)
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "rank %d", i)
	}
}

// runStampedOp is operation op on a: a stamped first epoch with a payload
// byte, then a second epoch through the data halves when op is odd.
func runStampedOp(ctx context.Context, a *Arena, op uint64, stamp func(i int, op uint64) Stamp) (err error) {
	if err := a.Begin(op); err != nil {
		return err
	}
	defer func() { a.End(err) }()
	me := a.Index()
	e := a.Next()
	a.Inline(me, e)[0] = byte(op) + byte(me)
	a.PostStamped(e, stamp(me, op))
	if err := a.WaitAllInline(ctx, e); err != nil {
		return err
	}
	for j := range a.Size() {
		if got, want := a.StampOf(j, e), stamp(j, op); got != want {
			return fmt.Errorf("op %d: stamp of rank %d is %v, want %v", op, j, got, want)
		}
		if got := a.Inline(j, e)[0]; got != byte(op)+byte(j) {
			return fmt.Errorf("op %d: payload of rank %d is %d, want %d", op, j, got, byte(op)+byte(j))
		}
	}
	if op%2 == 1 {
		e = a.Next()
		a.Post(e)
		return a.WaitAll(ctx, e)
	}
	return nil
}
