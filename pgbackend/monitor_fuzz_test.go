package pgbackend

import (
	"testing"
)

// FuzzControlMessage feeds arbitrary bytes to the decoder of the monitor's
// control messages (read from peers' TCP links): it must never panic, and
// whatever it accepts must encode back to the same message.
func FuzzControlMessage(f *testing.F) {
	reply := &ctlMsg{kind: ctlReply, id: 3, issued: 9}
	reply.streams[0].started, reply.streams[0].ended = 9, 8
	f.Add(reply.encode())
	f.Add((&ctlMsg{kind: ctlFail, text: "peer rank 2 is gone"}).encode())
	f.Add(make([]byte, ctlSize))
	f.Add([]byte("HGM1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeCtl(b)
		if err != nil {
			return
		}
		again, err := decodeCtl(m.encode())
		if err != nil {
			t.Fatalf("re-decoding an accepted message: %v", err)
		}
		if again != m {
			t.Fatalf("round trip changed the message: %+v != %+v", again, m)
		}
	})
}
