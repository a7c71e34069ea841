package arena

import "encoding/binary"

// A Stamp describes an operation as one rank runs it, in three words of the
// caller's encoding (for a collective: which one, its sequence number, its
// size...). The arena does not interpret them; it carries them in the flag
// line of the inline slot so that the ranks can check that they run the
// same operation before they use each other's data, at no cost beyond the
// cache line they exchange anyway. (Three scalar fields rather than an
// array: Go passes them in registers.)
type Stamp struct {
	Op, Seq, Size uint64
}

// PostStamped is PostInline for the first epoch of an operation: it writes
// s next to the own inline slot's flag, then stores the flag and posts.
// Every operation must post its first epoch this way, whatever buffer its
// data is in, so that a peer running a different operation still meets it
// in that epoch (see "Stamps" in the package documentation).
func (a *Arena) PostStamped(e uint64, s Stamp) {
	b := a.stamps[e&1][a.index][:stampBytes]
	binary.LittleEndian.PutUint64(b[0:], s.Op)
	binary.LittleEndian.PutUint64(b[8:], s.Seq)
	binary.LittleEndian.PutUint64(b[16:], s.Size)
	a.PostInline(e)
}

// StampOf returns the stamp local rank j posted with epoch e. Read it only
// after WaitAllInline(e) (or Wait/WaitAll, which also follow the stamp)
// and before the next Post, as any epoch-e buffer.
func (a *Arena) StampOf(j int, e uint64) Stamp {
	b := a.stamps[e&1][j][:stampBytes]
	return Stamp{
		Op:   binary.LittleEndian.Uint64(b[0:]),
		Seq:  binary.LittleEndian.Uint64(b[8:]),
		Size: binary.LittleEndian.Uint64(b[16:]),
	}
}
