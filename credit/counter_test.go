package credit

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSenderCheck(t *testing.T) {
	tests := []struct {
		name        string
		fctbs, fccl uint16
		blocks      int
		want        bool
	}{
		{"exactly enough", 0, 10, 10, true},
		{"one short", 0, 10, 11, false},
		// Wrap: FCTBS 4090, FCCL 4 → 10 blocks of room ((4-4090) mod 4096 = 10).
		{"across wrap enough", 4090, 4, 10, true},
		{"across wrap short", 4090, 4, 11, false},
		// FCCL behind FCTBS (stale update): (5-10) mod 4096 = 4091 > 2048 → no.
		{"limit behind", 10, 5, 0, false},
		{"zero blocks at limit", 10, 10, 0, true},
		// Largest legal lead is 2048 blocks.
		{"half range", 0, 2048, 0, true},
		{"beyond half range", 0, 2049, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Sender{fctbs: tc.fctbs, fccl: tc.fccl}
			assert.Equal(t, tc.want, s.CanSend(tc.blocks))
		})
	}
}

func TestReceiverAdvertises(t *testing.T) {
	r := NewReceiver(100)
	s := NewSender(100)
	require.True(t, s.CanSend(65))
	s.Send(65)
	r.Receive(65)
	// 35 free, ABR 65 → FCCL = 100: the limit does not move until blocks free.
	assert.Equal(t, uint16(100), r.FCCL())
	assert.False(t, s.CanSend(36))
	r.Release(65)
	s.Update(r.FCCL())
	// ABR 65 + 100 free = 165.
	assert.Equal(t, uint16(165), s.FCCL())
	assert.Equal(t, 100, s.Available())
}

// TestRandomizedConservation runs a sender and receiver through random sends,
// releases and delayed updates across many wraps: the sender never overflows
// the buffer (Receive panics if it does).
func TestRandomizedConservation(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		capacity := 1 + r.IntN(300)
		rx := NewReceiver(capacity)
		tx := NewSender(capacity)
		var inFlight []int // packets sent but not yet received
		var queued []int   // packets in the receive buffer
		var pendingFCCL []uint16
		for step := 0; step < 20000; step++ {
			switch r.IntN(4) {
			case 0:
				n := 1 + r.IntN(66)
				if n <= capacity && tx.CanSend(n) {
					tx.Send(n)
					inFlight = append(inFlight, n)
				}
			case 1:
				if len(inFlight) > 0 {
					rx.Receive(inFlight[0]) // panics on overflow
					queued = append(queued, inFlight[0])
					inFlight = inFlight[1:]
				}
			case 2:
				if len(queued) > 0 {
					rx.Release(queued[0])
					queued = queued[1:]
					pendingFCCL = append(pendingFCCL, rx.FCCL())
				}
			case 3:
				if len(pendingFCCL) > 0 {
					tx.Update(pendingFCCL[0])
					pendingFCCL = pendingFCCL[1:]
				}
			}
			sum := func(xs []int) int {
				s := 0
				for _, x := range xs {
					s += x
				}
				return s
			}
			// What the sender may still send, plus what is on the wire, plus
			// what sits in the buffer, can never exceed the buffer: with a
			// stale FCCL the sender only underestimates the free space.
			require.LessOrEqual(t, sum(inFlight)+rx.Used()+tx.Available(), capacity, "seed %d step %d", seed, step)
			require.GreaterOrEqual(t, rx.Free(), 0)
		}
	}
}
