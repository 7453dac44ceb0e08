package link

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// lazyRig is quietRig with a refresh period of 2^30 ps (≈1.07 ms, the
// longest with which a port keeps flow-control packets: sendFC) and a
// time limit of 1 µs, before the first refresh: the rig's packets all
// come and go well within it.
func lazyRig(t *testing.T) (*components.Sim, *Port, *readyLog) {
	t.Helper()
	s := components.NewSim()
	log := &[]string{}
	own := &readyLog{s: s, log: log}
	pc := PortConfig{VLs: 1, BufferBlocks: 256, FCRefresh: 1 << 30}
	a := NewPort(s, own, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, &holdSink{}, "Test.Sink.Port[1]", 1, pc)
	cfg := Defaults()
	Connect(a, b, cfg.Timing(2))
	s.StopAt(ib.FromNanoseconds(1000))
	return s, a, own
}

// TestQuietCreditsNeedNoEvent: a flow-control packet sent to a port whose
// owner has nothing to send (Pending(false)) and that nobody traces is no
// event: its credits wait in the port and reach it when read. A read at the
// packet's arrival picosecond sees them if and only if its event sorts
// after the place the arrival would have held: that place is taken when the
// packet is sent (at release), so an event queued at 0 for the arrival
// time runs before it and sees the credits still out, one queued at
// release, after the Release step sends the packet, runs after it and sees
// them back. Under Sim.AllEvents the arrival is an event, with the same
// reads, and the owner is told (the definition tells every owner). Events:
// the Send step, its wire end (Send waits for it), the packet's head
// arrival at the peer, the Release step and the two readers: 6; under
// AllEvents also the flow-control packet's wire end (every wire end is
// queued) and its arrival: 8. Before quiet credits kept it, the arrival
// was a seventh event in the quiet run too.
func TestQuietCreditsNeedNoEvent(t *testing.T) {
	for _, all := range []bool{false, true} {
		s, a, own := lazyRig(t)
		if all {
			s.AllEvents()
		}
		b := a.Peer()
		full := a.CreditsAvailable(0)
		pkt := packet64(s)
		credits := pkt.Credits()
		const release = ib.PS(50000)
		arrive := release + a.Timing().Latency() + a.Serialization(ib.FlowControlBytes)
		var before, after int
		s.Schedule(0, step(func() {
			a.Send(pkt)
			a.Pending(false)
		}), 0)
		s.Schedule(arrive, step(func() { before = a.CreditsAvailable(0) }), 0)
		s.Schedule(release, step(func() {
			b.Release(0, credits)
			s.Schedule(arrive, step(func() { after = a.CreditsAvailable(0) }), 0)
		}), 0)
		require.NoError(t, s.Run())
		assert.Equal(t, full-credits, before, "all=%v: a read queued before the packet was sent", all)
		assert.Equal(t, full, after, "all=%v: a read queued after it", all)
		told := []ib.PS{ser64}
		want := uint64(6)
		if all {
			told, want = append(told, arrive), 8
		}
		assert.Equal(t, told, own.at, "all=%v: who is told of the credits", all)
		assert.Equal(t, want, s.Events(), "all=%v", all)
	}
}

// TestQuietCreditsArmedByPending: an owner that says it has something to
// send (Pending(true)) while a flow-control packet is on its way gets its
// PortReady at the packet's arrival, as if the arrival had been an event
// all along; one that says so after the arrival gets none (the arrival
// found it idle) and reads the credits. A traced port, a lossy wire and a
// peer in another partition keep the arrival an event (not tested here:
// fabric's TestLazyCreditsAgree runs them).
func TestQuietCreditsArmedByPending(t *testing.T) {
	for _, c := range []struct {
		name      string
		pendingAt ib.PS // when the owner says it has something to send; 0: never
		wantReady bool
	}{
		{"idle throughout", 0, false},
		{"pending while on the wire", 50100, true},
		{"pending after it arrived", 90000, false},
	} {
		s, a, own := lazyRig(t)
		b := a.Peer()
		full := a.CreditsAvailable(0)
		pkt := packet64(s)
		credits := pkt.Credits()
		const release = ib.PS(50000)
		// The cable's latency (2 m) is ≈10 ns: the packet is on its way
		// at 50,100 ps and has arrived by 90,000.
		arrive := release + a.Timing().Latency() + a.Serialization(ib.FlowControlBytes)
		require.Less(t, ib.PS(50100), arrive)
		require.Greater(t, ib.PS(90000), arrive)
		s.Schedule(0, step(func() {
			a.Send(pkt)
			a.Pending(false)
		}), 0)
		s.Schedule(release, step(func() { b.Release(0, credits) }), 0)
		if c.pendingAt > 0 {
			s.Schedule(c.pendingAt, step(func() { a.Pending(true) }), 0)
		}
		require.NoError(t, s.Run())
		want := []ib.PS{ser64}
		if c.wantReady {
			want = append(want, arrive)
		}
		assert.Equal(t, want, own.at, c.name)
		assert.Equal(t, full, a.CreditsAvailable(0), "%s: the credits are back", c.name)
	}
}

// TestQuietCreditsAfterStop: a run stopped before a kept flow-control
// packet's arrival leaves its credits out, as the event would not have
// run; one stopped after leaves them back.
func TestQuietCreditsAfterStop(t *testing.T) {
	for _, stopLate := range []bool{false, true} {
		s, a, _ := lazyRig(t)
		b := a.Peer()
		full := a.CreditsAvailable(0)
		pkt := packet64(s)
		credits := pkt.Credits()
		const release = ib.PS(50000)
		arrive := release + a.Timing().Latency() + a.Serialization(ib.FlowControlBytes)
		s.Schedule(0, step(func() {
			a.Send(pkt)
			a.Pending(false)
		}), 0)
		s.Schedule(release, step(func() { b.Release(0, credits) }), 0)
		stop := arrive - 1
		if stopLate {
			stop = arrive + 1
		}
		s.Schedule(stop, step(func() { s.Stop() }), 0)
		s.Schedule(stop+100, step(func() {}), 0) // drained, not run
		require.NoError(t, s.Run())
		want := full - credits
		if stopLate {
			want = full
		}
		assert.Equal(t, want, a.CreditsAvailable(0), "stopped late: %v", stopLate)
	}
}
