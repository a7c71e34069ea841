package pgbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
)

// The monitor watches the peers over the TCP links, which join every pair
// of ranks even when data goes through shared memory: the kernel closes a
// dead process's sockets at once, so a receive kept posted on each link
// learns of a death within milliseconds (a vanished host takes the links'
// keepalive, ~25 s). A peer that destroys its communicator says goodbye
// first, so an orderly exit is never taken for a crash.
//
// The same control channel answers progress queries (how far has each
// stream got?), which name the ranks an op that timed out was waiting for,
// and carries failure notices, so that peers fail fast too.

// Control tags, apart from collective sequence numbers (below 1<<61) and
// user point-to-point tags (transport.P2PTagBit).
const (
	ctlTag      transport.Tag = 1<<62 | 1 // to a peer's monitor
	replyTag    transport.Tag = 1<<62 | 2 // answers to progress queries
	checkTagBit transport.Tag = 1 << 61   // fingerprint exchanges (check.go)
)

// Control messages have one fixed size (a receive must know it).
const (
	ctlSize      = 512
	ctlMagic     = 0x314d4748 // "HGM1"
	ctlHeadBytes = 24 + numStreams*24 + 2
	ctlTextBytes = ctlSize - ctlHeadBytes
)

// Control message kinds.
const (
	ctlQuery uint8 = iota + 1 // how far are you?
	ctlReply                  // this far (id of the query)
	ctlBye                    // I destroy my communicator: stop watching me
	ctlFail                   // my communicator failed, because: text
)

// ctlWait bounds every control send, and a progress query's wait for its
// answers.
const ctlWait = 500 * time.Millisecond

type ctlMsg struct {
	kind    uint8
	id      uint64
	issued  uint64
	streams [numStreams]struct{ started, ended, runningMs uint64 }
	text    string
}

func (m *ctlMsg) encode() []byte {
	b := make([]byte, ctlSize)
	binary.LittleEndian.PutUint32(b, ctlMagic)
	b[4] = m.kind
	binary.LittleEndian.PutUint64(b[8:], m.id)
	binary.LittleEndian.PutUint64(b[16:], m.issued)
	for i, s := range m.streams {
		o := 24 + 24*i
		binary.LittleEndian.PutUint64(b[o:], s.started)
		binary.LittleEndian.PutUint64(b[o+8:], s.ended)
		binary.LittleEndian.PutUint64(b[o+16:], s.runningMs)
	}
	n := copy(b[ctlHeadBytes:], m.text)
	binary.LittleEndian.PutUint16(b[ctlHeadBytes-2:], uint16(n))
	return b
}

func decodeCtl(b []byte) (ctlMsg, error) {
	var m ctlMsg
	if len(b) != ctlSize || binary.LittleEndian.Uint32(b) != ctlMagic {
		return m, errors.New("not a control message")
	}
	m.kind = b[4]
	m.id = binary.LittleEndian.Uint64(b[8:])
	m.issued = binary.LittleEndian.Uint64(b[16:])
	for i := range m.streams {
		o := 24 + 24*i
		m.streams[i].started = binary.LittleEndian.Uint64(b[o:])
		m.streams[i].ended = binary.LittleEndian.Uint64(b[o+8:])
		m.streams[i].runningMs = binary.LittleEndian.Uint64(b[o+16:])
	}
	n := int(binary.LittleEndian.Uint16(b[ctlHeadBytes-2:]))
	if n > ctlTextBytes {
		return m, errors.New("control message text too long")
	}
	m.text = string(b[ctlHeadBytes : ctlHeadBytes+n])
	return m, nil
}

// monitor runs one goroutine per peer, each keeping a control receive
// posted on the link to that peer.
type monitor struct {
	c      *Communicator
	ep     transport.Endpoint
	ctx    context.Context // ends at Destroy
	cancel context.CancelFunc
	wg     sync.WaitGroup

	qmu    sync.Mutex // one progress query at a time (replies share a tag)
	nextID uint64
}

// watchPeers starts the monitor over ep (the TCP endpoint, whose links
// fail as soon as a peer process dies) and names the job for trace files.
func (c *Communicator) watchPeers(ep transport.Endpoint, job string) {
	c.job = job
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{c: c, ep: ep, ctx: ctx, cancel: cancel}
	c.mon = m
	for p := 0; p < c.size; p++ {
		if p != c.rank {
			m.wg.Add(1)
			go m.watch(p)
		}
	}
}

// watch serves peer p's control messages until p says goodbye, its link
// fails (then the communicator fails), or the monitor stops.
func (m *monitor) watch(p int) {
	defer m.wg.Done()
	select { // a lazy link: the receive waits for the link, not makes it (lazy.go)
	case <-m.c.linkReady(p):
	case <-m.ctx.Done():
		return
	}
	buf := make([]byte, ctlSize)
	for {
		err := m.ep.Recv(m.ctx, p, ctlTag, buf)
		if err != nil {
			if m.ctx.Err() == nil && !errors.Is(err, transport.ErrClosed) {
				m.c.fail(&PeerFailure{Rank: p, Err: err}, true)
			}
			return
		}
		msg, err := decodeCtl(buf)
		if err != nil {
			continue // only our own peers can reach this tag; ignore noise
		}
		switch msg.kind {
		case ctlQuery:
			m.send(p, replyTag, m.progress(msg.id))
		case ctlBye:
			return
		case ctlFail:
			// With lazy links a notice reaches only the linked peers: pass
			// it on (lazy.go).
			m.c.fail(&PeerFailure{Rank: p, Reported: msg.text, Err: &transport.PeerError{Peer: p, Op: "failure notice", Err: errors.New(msg.text)}}, m.c.lazy != nil)
		}
	}
}

// progress is this rank's answer to query id.
func (m *monitor) progress(id uint64) *ctlMsg {
	now := time.Now()
	r := &ctlMsg{kind: ctlReply, id: id, issued: m.c.lane.seq.Load()}
	for i, s := range m.c.flight.streams() {
		r.streams[i].started, r.streams[i].ended = s.started, s.ended
		if !s.since.IsZero() {
			r.streams[i].runningMs = uint64(now.Sub(s.since).Milliseconds())
		}
	}
	return r
}

func (m *monitor) send(p int, tag transport.Tag, msg *ctlMsg) {
	ctx, cancel := context.WithTimeout(m.ctx, ctlWait)
	defer cancel()
	// Best effort: a peer that cannot be told has a failed link, which its
	// own monitor reports.
	_ = m.ep.Send(ctx, p, tag, msg.encode())
}

// notifyAll tells every peer, in parallel, why this communicator failed,
// and returns once every notice is written (or given up after ctlWait).
func (m *monitor) notifyAll(reason string) {
	if len(reason) > ctlTextBytes {
		reason = reason[:ctlTextBytes-3] + "..."
	}
	var wg sync.WaitGroup
	for p := 0; p < m.c.size; p++ {
		if p != m.c.rank && m.c.reachable(p) {
			wg.Go(func() { m.send(p, ctlTag, &ctlMsg{kind: ctlFail, text: reason}) })
		}
	}
	wg.Wait()
}

// sayBye tells every peer that this rank destroys its communicator.
func (m *monitor) sayBye() {
	for p := 0; p < m.c.size; p++ {
		if p != m.c.rank && m.c.reachable(p) {
			m.send(p, ctlTag, &ctlMsg{kind: ctlBye})
		}
	}
}

// stop ends the monitor's receives; close then closes its endpoint (the
// communicator's own, or the TCP links kept only for watching when every
// peer shares this host; closing twice is harmless) and waits for the
// monitor's goroutines.
func (m *monitor) stop() { m.cancel() }

func (m *monitor) close() error {
	err := m.ep.Close()
	m.wg.Wait()
	if err != nil {
		return fmt.Errorf("close the TCP links: %w", err)
	}
	return nil
}

// query asks every peer how far it has got; answers missing after ctlWait
// are nil.
func (m *monitor) query() []*ctlMsg {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	m.nextID++
	id := m.nextID
	ctx, cancel := context.WithTimeout(m.ctx, ctlWait)
	defer cancel()
	answers := make([]*ctlMsg, m.c.size)
	var wg sync.WaitGroup
	for p := 0; p < m.c.size; p++ {
		if p == m.c.rank || !m.c.reachable(p) {
			continue // a peer without a lazy link yet stays silent
		}
		wg.Go(func() {
			q := &ctlMsg{kind: ctlQuery, id: id}
			if m.ep.Send(ctx, p, ctlTag, q.encode()) != nil {
				return
			}
			buf := make([]byte, ctlSize)
			for m.ep.Recv(ctx, p, replyTag, buf) == nil {
				// Answers to earlier queries that gave up may come first.
				if r, err := decodeCtl(buf); err == nil && r.kind == ctlReply && r.id == id {
					answers[p] = &r
					return
				}
			}
		})
	}
	wg.Wait()
	return answers
}

// stragglers explains a collective's timeout from the peers' progress:
// ", waiting for ranks [2]: rank 2 has not issued it (last issued seq 6);
// ranks [1 3] are in it". A peer that does not answer counts as one waited
// for only when no answer explains the wait: on a loaded host a live peer
// can miss ctlWait, and naming it beside the real straggler misleads.
// Empty when there is no monitor or for p2p ops.
func (c *Communicator) stragglers(op opDesc) string {
	if c.mon == nil || op.Stream < 0 {
		return ""
	}
	return explainWait(c.rank, op, c.mon.query())
}

// explainWait words the peers' answers (nil: no answer) for rank's
// timed-out op.
func explainWait(rank int, op opDesc, answers []*ctlMsg) string {
	var late, in, done, silent []int
	var notes []string
	for p, a := range answers {
		switch {
		case p == rank:
			continue
		case a == nil:
			silent = append(silent, p)
		case a.issued < op.Seq:
			late = append(late, p)
			notes = append(notes, fmt.Sprintf("rank %d has not issued it (last issued seq %d)", p, a.issued))
		case a.streams[op.Stream].started < op.Seq:
			late = append(late, p)
			s := a.streams[op.Stream]
			notes = append(notes, fmt.Sprintf("rank %d is still in seq %d on this stream (for %d ms)", p, s.started, s.runningMs))
		case a.streams[op.Stream].ended >= op.Seq:
			done = append(done, p)
		default:
			in = append(in, p)
		}
	}
	if len(late) == 0 {
		late = silent
	}
	msg := fmt.Sprintf(", waiting for ranks %v", late)
	if len(late) == 0 {
		msg = ", every rank has joined it"
	}
	for _, n := range notes {
		msg += "; " + n
	}
	if len(silent) > 0 {
		msg += fmt.Sprintf("; ranks %v did not answer", silent)
	}
	if len(in) > 0 {
		msg += fmt.Sprintf("; ranks %v are in it", in)
	}
	if len(done) > 0 {
		msg += fmt.Sprintf("; ranks %v have ended it", done)
	}
	return msg
}
