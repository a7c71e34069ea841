package pgbackend

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// The split agreement: before a split exists, its members agree on its tag
// space in one round over the root's links. Each member sends every other
// member an offer: digests of the split's name and of its member list, how
// many splits of that same member list this rank has begun before (its
// attempt, counted whether they succeeded or not), and the tag spaces it has in use (its live splits of the same
// root) and has ever used. The split takes the lowest space that no member
// has ever used, else the lowest no member has in use. Every split sharing
// a link with it has both ends of that link among its members, so no two
// live splits that share a link share a space; a space is reused only once
// every space has been used, which keeps a destroyed split's unconsumed
// messages away from its successors.
//
// A member takes a peer's offer as the one for this split when its member
// list and attempt are this rank's (members make their splits in the same
// order, as torch requires, so the attempts agree even where torch's group
// names do not: a group name counts every group a rank has made, and
// split_group makes one on the parent's ranks only). An offer of the same
// name with another member list or attempt fails the split on the spot,
// naming the rank that disagrees. Any other offer is skipped: one left over
// from an earlier split that failed on its sender. A member that never
// offers fails the split after the timeout, naming the ranks that did not
// join. After ranks disagreed on a member list, their attempts at that list
// differ, and a later split of the same ranks fails on them with a message
// that says so, rather than pairing with an offer left over.

// Tag spaces of splits and of their agreement (transport/sub).
const (
	splitAgreeSpace = 272
	minSplitSpace   = 512
	maxSplitSpace   = 4095
	numSplitSpaces  = maxSplitSpace - minSplitSpace + 1
)

// tagSplitOffer is the tag of offers, in splitAgreeSpace.
const tagSplitOffer transport.Tag = 1

const (
	splitOfferMagic = 0x50534748 // "HGSP"
	splitBitmap     = numSplitSpaces / 8
	// splitOfferSize: magic, name digest, members digest, member count,
	// attempt, the spaces in use and the spaces ever used.
	splitOfferSize = 4 + 32 + 32 + 4 + 4 + 2*splitBitmap
)

// splitOffer is one member's offer.
type splitOffer struct {
	name, members [32]byte
	count         uint32
	attempt       uint32
	live, ever    [splitBitmap]byte
}

func (o *splitOffer) encode() []byte {
	b := make([]byte, splitOfferSize)
	binary.LittleEndian.PutUint32(b, splitOfferMagic)
	copy(b[4:], o.name[:])
	copy(b[36:], o.members[:])
	binary.LittleEndian.PutUint32(b[68:], o.count)
	binary.LittleEndian.PutUint32(b[72:], o.attempt)
	copy(b[76:], o.live[:])
	copy(b[76+splitBitmap:], o.ever[:])
	return b
}

func decodeSplitOffer(b []byte) (splitOffer, error) {
	var o splitOffer
	if len(b) != splitOfferSize || binary.LittleEndian.Uint32(b) != splitOfferMagic {
		return o, errors.New("not a split offer")
	}
	copy(o.name[:], b[4:])
	copy(o.members[:], b[36:])
	o.count = binary.LittleEndian.Uint32(b[68:])
	o.attempt = binary.LittleEndian.Uint32(b[72:])
	copy(o.live[:], b[76:])
	copy(o.ever[:], b[76+splitBitmap:])
	return o, nil
}

func setSpace(bm *[splitBitmap]byte, space int) {
	i := space - minSplitSpace
	bm[i/8] |= 1 << (i % 8)
}

func hasSpace(bm *[splitBitmap]byte, space int) bool {
	i := space - minSplitSpace
	return bm[i/8]&(1<<(i%8)) != 0
}

// membersDigest is the digest of an ordered member list.
func membersDigest(ranks []int) [32]byte {
	h := sha256.New()
	var b [8]byte
	for _, r := range ranks {
		binary.LittleEndian.PutUint64(b[:], uint64(r))
		h.Write(b[:])
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// offer is this rank's offer for a split of root's ranks members; it
// counts the attempt, whatever its outcome.
func (f *splitFamily) offer(name string, members []int) splitOffer {
	o := splitOffer{name: sha256.Sum256([]byte(name)), members: membersDigest(members), count: uint32(len(members))}
	f.mu.Lock()
	defer f.mu.Unlock()
	o.attempt = f.attempts[o.members]
	f.attempts[o.members]++
	for s := range f.live {
		setSpace(&o.live, s)
	}
	for s := range f.ever {
		setSpace(&o.ever, s)
	}
	return o
}

// chooseSpace is the space every member takes, from every member's offer.
func chooseSpace(offers []splitOffer) (int, error) {
	free := func(used func(o *splitOffer, s int) bool) int {
	next:
		for s := minSplitSpace; s <= maxSplitSpace; s++ {
			for i := range offers {
				if used(&offers[i], s) {
					continue next
				}
			}
			return s
		}
		return -1
	}
	if s := free(func(o *splitOffer, s int) bool { return hasSpace(&o.ever, s) }); s >= 0 {
		return s, nil
	}
	if s := free(func(o *splitOffer, s int) bool { return hasSpace(&o.live, s) }); s >= 0 {
		return s, nil
	}
	return 0, fmt.Errorf("%w: the members have %d splits alive that share links: no tag space is free", ErrInvalidArgument, numSplitSpaces)
}

// agreeSpace runs the agreement among root's ranks members (in the
// split's order) and returns the split's tag space. It waits at most
// timeout, and no longer than the root lives.
func agreeSpace(ctx context.Context, root *Communicator, members []int, name string, timeout time.Duration) (int, error) {
	view, err := sub.New(root.links, members, splitAgreeSpace)
	if err != nil {
		return 0, err
	}
	mine := root.split.family.offer(name, members)
	// Offers go out under sendCtx, which only the timeout and the root's
	// end cut short: a member that fails on a disagreement still sends
	// its own offer, so that every other member sees the disagreement too.
	sendCtx, cancelSend := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	stop := context.AfterFunc(root.ctx, cancelSend) // the root failed or was aborted
	ctx, cancel := context.WithCancel(sendCtx)
	defer cancel()

	n, self := view.Size(), view.Rank()
	offers := make([]splitOffer, n)
	offers[self] = mine
	joined := make([]bool, n)
	joined[self] = true
	var (
		mu          sync.Mutex
		first       error
		sends, recv sync.WaitGroup
	)
	failWith := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	msg := mine.encode()
	for p := range n {
		if p == self {
			continue
		}
		sends.Go(func() {
			if err := view.Send(sendCtx, p, tagSplitOffer, msg); err != nil && sendCtx.Err() == nil {
				failWith(fmt.Errorf("sending the split offer to parent rank %d: %w", members[p], err))
			}
		})
		recv.Go(func() {
			o, err := receiveOffer(ctx, view, p, &mine)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					failWith(fmt.Errorf("receiving the split offer of parent rank %d: %w", members[p], err))
				}
			case o.members != mine.members:
				failWith(fmt.Errorf("%w: parent rank %d lists %d members for this group, not the same as this rank's %d %v: every member must pass the same ranks, in the same order", ErrInvalidArgument, members[p], o.count, len(members), members))
			case o.attempt != mine.attempt:
				failWith(fmt.Errorf("%w: parent rank %d has begun %d groups of ranks %v before this one, this rank %d: every member must create its groups in the same order", ErrInvalidArgument, members[p], o.attempt, members, mine.attempt))
			default:
				mu.Lock()
				offers[p], joined[p] = o, true
				mu.Unlock()
			}
		})
	}
	recv.Wait()
	mu.Lock()
	err, late := first, ctx.Err()
	mu.Unlock()
	if err == nil && late == nil {
		sends.Wait() // every offer arrived, so every send has returned or will at once
		stop()
		cancelSend()
		return chooseSpace(offers)
	}
	go func() { // sends to members that never receive end at the timeout
		sends.Wait()
		stop()
		cancelSend()
	}()
	if err != nil {
		return 0, err
	}
	var missing []int
	for p, ok := range joined {
		if !ok {
			missing = append(missing, members[p])
		}
	}
	if cause := root.failure(); cause != nil {
		return 0, fmt.Errorf("the communicator it splits %w: %w", ErrCommFailed, cause)
	}
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return 0, fmt.Errorf("%w: parent ranks %v did not join within %v (connect timeout): do all of ranks %v create this group, with the same ranks?", ErrTimeout, missing, timeout, members)
	}
	return 0, fmt.Errorf("waiting for parent ranks %v: %w", missing, context.Cause(ctx))
}

// receiveOffer returns peer's offer for the split mine is this rank's
// offer for, or one of the same name that disagrees, skipping any other
// (left over from earlier splits that failed).
func receiveOffer(ctx context.Context, view transport.Endpoint, peer int, mine *splitOffer) (splitOffer, error) {
	buf := make([]byte, splitOfferSize)
	for {
		if err := view.Recv(ctx, peer, tagSplitOffer, buf); err != nil {
			return splitOffer{}, err
		}
		o, err := decodeSplitOffer(buf)
		if err != nil {
			return splitOffer{}, err
		}
		if (o.members == mine.members && o.attempt == mine.attempt) || o.name == mine.name {
			return o, nil
		}
	}
}
