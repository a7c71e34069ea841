// Package streams runs operations asynchronously: in order within a stream,
// concurrently across streams, by priority when workers are scarce.
//
// A Scheduler owns streams. Each Stream is a FIFO: its operations start in
// submission order, one at a time (an operation starts only after the
// previous one of its stream has completed). Operations of different
// streams are independent and may run at the same time, so they may
// complete out of submission order.
//
// Every operation yields a Work, which completes exactly once with a status
// (nil or the operation's error, a panic included) and then runs its
// completion callbacks, so callers never need to poll. An operation may
// depend on Works of other streams (Stream.After, Stream.Record, the deps of
// Submit): the cross-stream events of CUDA and NCCL. A dependency holds the
// stream back without occupying a worker.
//
// # Scheduling
//
// A stream's first queued operation is ready once its stream is idle and
// its dependencies have completed. The scheduler grants ready operations a
// worker (a goroutine) under these rules:
//
//   - Budget: at most Config.Workers operations run at once (0: no bound,
//     one per stream). Dependency-only operations (After, Record) do not
//     count.
//   - Priority: when several operations are ready, the one of the stream with
//     the higher priority is granted first; equal priorities go in order of
//     submission. A running operation is never preempted.
//   - Deferral limit: a ready operation that has waited Config.DeferLimit for
//     a worker starts anyway, above the budget. Collectives on different
//     streams wait for each other across ranks: with a strict budget, rank 0
//     could run op A while rank 1 runs op B, each waiting for the other rank
//     to start the op it holds back, for ever. The limit bounds the cost of
//     such a disagreement instead.
//
// With the default budget (one worker per stream) every ready operation
// starts at once; priority then orders grants that happen together, and
// matters when a budget smaller than the number of busy streams is set.
//
// # Back-pressure
//
// Each stream holds at most its depth of queued and running operations. A
// submitter that finds it full waits for room (Stream.Reserve takes a
// context for that wait) instead of growing memory.
//
// # Inline execution
//
// Work.RunInline lets a caller that is about to wait run the operation on
// its own goroutine when the operation is next on its stream and a worker is
// free: it saves the hand-off to a worker and back, which dominates the
// latency of small synchronous operations.
//
// # Holding a stream
//
// Stream.TryHold lets a caller run an operation of its own on the calling
// thread, outside the scheduler, while the stream is idle: a small
// blocking collective then costs no Work, no grant and no timer. While
// the stream is held the scheduler starts nothing on it; operations
// queued meanwhile start once the holder releases it (hold.go).
//
// # Clock readings
//
// Each operation is timed by three readings of its scheduler's Clock
// (Stamps: issued, started, ended), of the monotonic clock alone. An
// operation queued as an Op (Reservation.SubmitOp) is handed its readings,
// and may supply its end itself, so that its own bookkeeping (a flight
// recorder, a deadline) shares them instead of reading the clock again.
package streams
