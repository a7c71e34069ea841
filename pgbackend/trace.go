package pgbackend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TraceVersion is the format version of flight-recorder dumps.
const TraceVersion = 1

// traceHeader is the first part of a dump: who wrote it, when and why.
type traceHeader struct {
	Version   int           `json:"version"`
	Job       string        `json:"job"` // the same on every rank of the communicator
	Rank      int           `json:"rank"`
	Size      int           `json:"size"`
	PID       int           `json:"pid"`
	Host      string        `json:"host"`
	Reason    string        `json:"reason"`
	DumpedAt  int64         `json:"dumped_at_ns"` // Unix time
	Issued    uint64        `json:"issued_seq"`   // collectives issued so far
	Failure   string        `json:"failure,omitempty"`
	TraceSize int           `json:"trace_size"`
	Recorded  uint64        `json:"recorded"` // ops recorded in all; the oldest may be gone
	Streams   []traceStream `json:"streams"`
	TimeoutMs int64         `json:"timeout_ms"`
}

type traceStream struct {
	Name         string  `json:"name"`
	LastStarted  uint64  `json:"last_started_seq"`
	LastEnded    uint64  `json:"last_ended_seq"`
	RunningForMs float64 `json:"running_for_ms,omitempty"`
}

// traceOp is one op of a dump. Times are Unix nanoseconds (0: not yet).
type traceOp struct {
	ID     uint64 `json:"id"`
	Op     string `json:"op"`
	Seq    uint64 `json:"seq"`
	Bytes  int    `json:"bytes"`
	DType  string `json:"dtype,omitempty"`
	RedOp  string `json:"red_op,omitempty"`
	Root   int    `json:"root"`
	Peer   int    `json:"peer"`
	Tag    uint32 `json:"tag,omitempty"`
	Stream string `json:"stream"`
	Route  string `json:"route"`
	Algo   string `json:"algo,omitempty"`
	// Compression is the wire format of a compressed all_reduce's
	// messages (fp16, bf16); absent when uncompressed.
	Compression string  `json:"compression,omitempty"`
	State       string  `json:"state"`
	Enqueued    int64   `json:"enqueued_ns"`
	Started     int64   `json:"started_ns"`
	Ended       int64   `json:"ended_ns"`
	QueuedMs    float64 `json:"queued_ms"` // enqueue to start (or to the dump)
	RanMs       float64 `json:"ran_ms"`    // start to end (or to the dump)
	Error       string  `json:"error,omitempty"`
}

// streamName names a collective stream index (-1: point-to-point).
func streamName(i int) string {
	switch i {
	case StreamDefault:
		return "default"
	case StreamHighPriority:
		return "high"
	case -1:
		return "p2p"
	}
	return fmt.Sprintf("stream%d", i)
}

// TraceJSON returns the flight recorder's contents as a JSON document, one
// op per line, oldest first.
func (c *Communicator) TraceJSON(reason string) []byte {
	now := time.Now()
	entries, total := c.flight.snapshot()
	host, _ := os.Hostname()
	h := traceHeader{
		Version: TraceVersion, Job: c.jobName(), Rank: c.rank, Size: c.size, PID: os.Getpid(), Host: host,
		Reason: reason, DumpedAt: now.UnixNano(), Issued: c.lane.seq.Load(), TraceSize: c.cfg.TraceSize,
		Recorded: total, TimeoutMs: c.cfg.Timeout.Milliseconds(),
	}
	if err := c.failure(); err != nil {
		h.Failure = err.Error()
	}
	for i, p := range c.flight.streams() {
		if i > StreamHighPriority && p.started == 0 {
			continue // an extra stream (HCCL_GO_STREAMS) never used
		}
		s := traceStream{Name: streamName(i), LastStarted: p.started, LastEnded: p.ended}
		if !p.since.IsZero() {
			s.RunningForMs = millis(now.Sub(p.since))
		}
		h.Streams = append(h.Streams, s)
	}
	var b bytes.Buffer
	head, _ := json.Marshal(h) // plain structs: cannot fail
	b.Write(head[:len(head)-1])
	b.WriteString(",\n\"ops\": [")
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		line, _ := json.Marshal(traceOpOf(e, now))
		b.WriteString("\n  ")
		b.Write(line)
	}
	b.WriteString("\n]}\n")
	return b.Bytes()
}

func traceOpOf(e flightEntry, now time.Time) traceOp {
	op := e.op
	t := traceOp{
		ID: e.id, Op: op.Kind, Seq: op.Seq, Bytes: op.Bytes, DType: dtypeName(op.DType), RedOp: redOpName(op.RedOp),
		Root: op.Root, Peer: op.Peer, Tag: op.Tag, Stream: streamName(op.Stream), Route: op.Route, Algo: string(op.Algo), Compression: string(op.Compression),
		State: e.state.String(), Enqueued: unixNanos(e.enqueued), Started: unixNanos(e.started), Ended: unixNanos(e.ended),
		Error: e.err,
	}
	startOrNow := e.started
	if startOrNow.IsZero() {
		startOrNow = now
	}
	t.QueuedMs = millis(startOrNow.Sub(e.enqueued))
	if !e.started.IsZero() {
		endOrNow := e.ended
		if endOrNow.IsZero() {
			endOrNow = now
		}
		t.RanMs = millis(endOrNow.Sub(e.started))
	}
	return t
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TracePath is where DumpTrace writes when given no path:
// HCCL_GO_TRACE_DIR (default: $TMPDIR/hccl-go-trace) /
// hccl-go-trace-<job>-rank<rank>.json.
func (c *Communicator) TracePath() string {
	dir := c.cfg.TraceDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "hccl-go-trace")
	}
	return filepath.Join(dir, fmt.Sprintf("hccl-go-trace-%s-rank%d.json", c.jobName(), c.rank))
}

// DumpTrace writes the flight recorder as JSON to path (empty: TracePath),
// creating its directory, and returns the path written.
func (c *Communicator) DumpTrace(path, reason string) (string, error) {
	if path == "" {
		path = c.TracePath()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("dump trace of rank %d: %w", c.rank, err)
	}
	// Write then rename, so a reader never sees half a dump.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, c.TraceJSON(reason), 0o600); err != nil {
		return "", fmt.Errorf("dump trace of rank %d: %w", c.rank, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("dump trace of rank %d: %w", c.rank, err)
	}
	return path, nil
}

// jobName identifies the communicator in trace file names: the job ID
// from the rendezvous, the same on all ranks, when Connect made it.
func (c *Communicator) jobName() string {
	if c.job != "" {
		return c.job
	}
	return fmt.Sprintf("pid%d-%d", os.Getpid(), c.created.UnixNano())
}

// autoDump writes the trace once per communicator, on its first failure,
// and returns a note for the error message naming the file ("" when
// disabled, already done, or impossible).
func (c *Communicator) autoDump(reason string) string {
	if c.cfg.TraceSize <= 0 || !c.dumped.CompareAndSwap(false, true) {
		return ""
	}
	path, err := c.DumpTrace("", reason)
	if err != nil {
		logf("flight recorder: %v", err)
		return ""
	}
	logf("flight recorder of rank %d written to %s (%s)", c.rank, path, reason)
	return " [flight recorder: " + path + "]"
}

// logf writes one line to stderr, for what a user must see even when no
// error carries it: where a dump went, a refused connection.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "hccl-go: "+format+"\n", args...)
}

// tcpLogf receives transport/tcp's lines (refused connections, failed
// links), which carry their own prefix. A link that ends because its peer
// said goodbye is an orderly destroy, not news: those lines are dropped.
func tcpLogf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if strings.Contains(line, "peer closed its endpoint") {
		return
	}
	fmt.Fprintln(os.Stderr, line)
}
