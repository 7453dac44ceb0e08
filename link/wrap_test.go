package link

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/credit"
	"github.com/hcasim/hcasim/ib"
)

// wrapFault is a bug the credit checker of runWraps must catch.
type wrapFault int

const (
	noFault      wrapFault = iota
	loseCredit             // the sink never frees one packet's blocks
	inventCredit           // the sink frees one packet's blocks twice
)

// wrapSink frees each packet a random time after its tail and counts the
// blocks that reached it per VL.
type wrapSink struct {
	s       *components.Sim
	p       *Port
	r       *rand.Rand
	arrived [2]int64
	got     int
	fault   wrapFault
	check   func()
}

func (k *wrapSink) PacketArrived(p *Port, pkt *ib.Packet, head, tail ib.PS) {
	k.arrived[pkt.VL] += int64(pkt.Credits())
	k.got++
	k.check()
	ev := k.s.Schedule(tail+ib.PS(k.r.IntN(300))*ib.Nanosecond, k, 1)
	ev.Pkt = pkt
}

func (k *wrapSink) HandleEvent(ev *components.Event) {
	vl, n := int(ev.Pkt.VL), ev.Pkt.Credits()
	switch {
	case k.fault == loseCredit && k.got == 5000:
		k.fault = noFault // this packet's blocks are never freed
	case k.fault == inventCredit && k.got == 5000 && k.p.BufferUsed(vl) >= 2*n:
		k.fault = noFault
		k.p.Release(vl, n) // once too often
		k.p.Release(vl, n)
	default:
		k.p.Release(vl, n)
	}
	k.check()
}

func (k *wrapSink) PortReady(*Port) {}

// wrapSource sends random-size packets on VL 0 or 1 whenever the wire and
// credits allow and counts the blocks it sent per VL, unwrapped.
type wrapSource struct {
	s     *components.Sim
	r     *rand.Rand
	left  int
	next  *ib.Packet
	sent  [2]int64
	check func()
}

func (src *wrapSource) PacketArrived(*Port, *ib.Packet, ib.PS, ib.PS) { panic("source got a packet") }

func (src *wrapSource) PortReady(p *Port) {
	src.check()
	for src.left > 0 {
		if src.next == nil {
			src.next = src.s.NewPacket()
			src.next.Opcode, src.next.VL, src.next.PayloadLen = ib.SendOnly, uint8(src.r.IntN(2)), 1+src.r.IntN(4096)
		}
		if !p.CanSend(src.next) {
			return // a PortReady follows the wire going idle and each FC arrival
		}
		src.sent[src.next.VL] += int64(src.next.Credits())
		p.Send(src.next)
		src.next = nil
		src.left--
	}
}

// runWraps streams 10,000 packets of 1..4096 payload bytes on two VLs over
// 20 m of NDR copper into 3-packet buffers, and checks the credit loop
// after every arrival and release: the sender's credits plus the blocks on
// the wire plus the blocks in the buffer never exceed the buffer (more is an
// invented credit). Once idle (the last release's FC packet and a refresh
// delivered), every VL's credits must equal its whole buffer (less is a lost
// credit), FCTBS must be the blocks sent mod 4096 and the receiver's ABR
// equal to it. It returns how often VL 0's FCTBS wrapped and what the
// checks found.
func runWraps(t *testing.T, seed uint64, fault wrapFault) (wraps int64, violations []string) {
	const packets = 10000
	r := rand.New(rand.NewPCG(seed, 4096))
	s := components.NewSim()
	pc := PortConfig{VLs: 2, BufferBlocks: 3 * 65, FCRefresh: 2 * ib.Microsecond}
	src := &wrapSource{s: s, r: r, left: packets}
	sink := &wrapSink{s: s, r: r, fault: fault}
	a := NewPort(s, src, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, sink, "Test.Sink.Port[1]", 1, pc)
	sink.p = b
	cfg := Defaults()
	Connect(a, b, cfg.Timing(20))
	fail := func(format string, args ...any) {
		if len(violations) < 5 {
			violations = append(violations, fmt.Sprintf("%d ps: ", s.Now())+fmt.Sprintf(format, args...))
		}
	}
	sentBlocks := &src.sent
	check := func() {
		for vl := range 2 {
			onWire := sentBlocks[vl] - sink.arrived[vl]
			if got := int64(a.CreditsAvailable(vl)) + onWire + int64(b.BufferUsed(vl)); got > int64(b.BufferCapacity(vl)) {
				fail("VL %d: %d credits + %d blocks on the wire + %d buffered > %d-block buffer (credit invented)",
					vl, a.CreditsAvailable(vl), onWire, b.BufferUsed(vl), b.BufferCapacity(vl))
			}
		}
	}
	sink.check = check
	src.check = check
	src.PortReady(a)
	// Once every packet is in, let the last releases and two refreshes
	// reach the sender, then stop.
	var doneAt ib.PS
	settle := 2*pc.FCRefresh + ib.Microsecond
	s.Schedule(0, &stopWhen{s: s, cond: func() bool {
		if doneAt == 0 && sink.got == packets {
			doneAt = s.Now()
		}
		return doneAt > 0 && s.Now() >= doneAt+settle
	}}, 0)
	s.StopAt(ib.Second)
	require.NoError(t, s.Run())
	require.Equal(t, packets, sink.got, "seed %d: every packet arrived", seed)
	for vl := range 2 {
		if got, want := a.CreditsAvailable(vl), b.BufferCapacity(vl)-b.BufferUsed(vl); got != want || b.BufferUsed(vl) != 0 {
			fail("idle VL %d: %d credits for a %d-block buffer holding %d blocks (credit lost)", vl, got, b.BufferCapacity(vl), b.BufferUsed(vl))
		}
		if got, want := a.vl[vl].tx.FCTBS(), uint16(sentBlocks[vl]%credit.Modulus); got != want {
			fail("VL %d: FCTBS %d, blocks sent mod 4096 = %d", vl, got, want)
		}
		if a.vl[vl].tx.FCTBS() != b.vl[vl].rx.ABR() {
			fail("VL %d: FCTBS %d but ABR %d", vl, a.vl[vl].tx.FCTBS(), b.vl[vl].rx.ABR())
		}
	}
	return sentBlocks[0] / credit.Modulus, violations
}

// TestCreditsConservedOverManyWraps: 10,000 packets of up to 65 blocks on
// two VLs send some 160,000 blocks per VL, so each VL's 12-bit FCTBS, FCCL
// and ABR wrap about 40 times; not one credit is lost or invented. The same
// checks catch a sink that frees one packet twice or never.
func TestCreditsConservedOverManyWraps(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		wraps, v := runWraps(t, seed, noFault)
		assert.Empty(t, v, "seed %d", seed)
		// Mean payload ≈ 2048 bytes → ≈ 33 blocks; 5,000 packets per VL.
		assert.Greater(t, wraps, int64(30), "seed %d: the counters wrapped many times", seed)
	}
	_, v := runWraps(t, 1, loseCredit)
	assert.NotEmpty(t, v, "a lost credit is caught")
	// A block freed twice is caught by the checks or, when the buffer's own
	// accounting sees more free blocks than it has, by its panic.
	func() {
		defer func() {
			if p := recover(); p != nil {
				v = []string{fmt.Sprint(p)}
			}
		}()
		_, v = runWraps(t, 1, inventCredit)
	}()
	assert.NotEmpty(t, v, "an invented credit is caught")
}
