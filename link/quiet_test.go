package link

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// readyLog is an owner that notes when its PortReady is called, and a
// label for each call, so a test can see the order among the picosecond's
// events.
type readyLog struct {
	s   *components.Sim
	log *[]string
	at  []ib.PS
}

func (r *readyLog) PacketArrived(*Port, *ib.Packet, ib.PS, ib.PS) {}
func (r *readyLog) PortReady(*Port) {
	r.at = append(r.at, r.s.Now())
	*r.log = append(*r.log, "ready")
}

// step runs f as an event at a time.
type step func()

func (f step) HandleEvent(*components.Event) { f() }

// quietRig is one port sending to a sink that keeps every packet (so no
// credit comes back and no flow-control packet is sent: FCRefresh 0 has
// no refresh timer), on 4x NDR with 2 m of cable.
func quietRig(t *testing.T) (*components.Sim, *Port, *readyLog, *[]string) {
	t.Helper()
	s := components.NewSim()
	log := &[]string{}
	own := &readyLog{s: s, log: log}
	pc := PortConfig{VLs: 1, BufferBlocks: 256}
	a := NewPort(s, own, "Test.Src.Port[1]", 1, pc)
	b := NewPort(s, &holdSink{}, "Test.Sink.Port[1]", 1, pc)
	cfg := Defaults()
	Connect(a, b, cfg.Timing(2))
	return s, a, own, log
}

func packet64(s *components.Sim) *ib.Packet {
	pkt := s.NewPacket()
	pkt.Opcode, pkt.PayloadLen = ib.SendOnly, 64
	return pkt
}

// ser64 is a 64-byte-payload packet's wire time on 4x NDR: 64 + 26 bytes
// of headers = 90 bytes at 50 bytes per ns (400 Gb/s) = 1.8 ns.
const ser64 = ib.PS(1800)

// TestSendQuietNeedsNoEvent: after Send the owner's PortReady comes when
// the packet's tail has left; after SendQuiet with nobody waiting it does
// not, and the run has exactly one event fewer (the wire's end; the head's
// arrival at the sink is the other event of both runs).
func TestSendQuietNeedsNoEvent(t *testing.T) {
	var events [2]uint64
	for k, quiet := range []bool{false, true} {
		s, a, own, _ := quietRig(t)
		require.Equal(t, ser64, a.Serialization(90))
		s.Schedule(0, step(func() {
			if quiet {
				a.SendQuiet(packet64(s))
			} else {
				a.Send(packet64(s))
			}
		}), 0)
		require.NoError(t, s.Run())
		events[k] = s.Events()
		if quiet {
			assert.Empty(t, own.at, "nobody waited: no PortReady")
		} else {
			assert.Equal(t, []ib.PS{ser64}, own.at, "PortReady as the tail leaves")
		}
		assert.Equal(t, uint64(1), a.Stats().DataPackets)
	}
	assert.Equal(t, events[0]-1, events[1], "the wire's end is the one event saved")
}

// TestSendQuietThenIdle: an owner that finds the wire busy (Idle) after a
// SendQuiet gets its PortReady as the tail leaves, exactly as after Send;
// looking twice queues one event.
func TestSendQuietThenIdle(t *testing.T) {
	s, a, own, _ := quietRig(t)
	s.Schedule(0, step(func() { a.SendQuiet(packet64(s)) }), 0)
	s.Schedule(500, step(func() { assert.False(t, a.Idle()) }), 0)
	s.Schedule(900, step(func() { assert.False(t, a.Idle()) }), 0)
	require.NoError(t, s.Run())
	assert.Equal(t, []ib.PS{ser64}, own.at)
	// Events: the send, the two looks, the sink's head arrival and one
	// wire's end.
	assert.Equal(t, uint64(5), s.Events())
}

// TestWaitIdleKeepsItsPlace: the wire's end, queued late (WaitIdle at
// 1 ns), runs where it would have run had it been queued at the send (0):
// ahead of an event for the same picosecond queued in between (at 0.5 ns),
// as same-picosecond events run in the order they were queued. Queued at
// 1 ns without its reserved place it would run after that event.
func TestWaitIdleKeepsItsPlace(t *testing.T) {
	s, a, _, log := quietRig(t)
	s.Schedule(0, step(func() { a.SendQuiet(packet64(s)) }), 0)
	s.Schedule(500, step(func() {
		s.Schedule(ser64, step(func() { *log = append(*log, "other") }), 0)
	}), 0)
	s.Schedule(1000, step(func() { a.WaitIdle() }), 0)
	require.NoError(t, s.Run())
	assert.Equal(t, []string{"ready", "other"}, *log)
}

// TestQuietSupersededEnd: a packet that starts at the picosecond the
// previous one ends, from an event queued before that one's send (so it
// runs ahead of the wire's end), takes the wire. If the owner sent it, the
// owner is served: no PortReady for it at the second packet's end (after
// Send, which asks, there is one).
func TestQuietSupersededEnd(t *testing.T) {
	for _, quiet := range []bool{true, false} {
		s, a, own, _ := quietRig(t)
		s.Schedule(0, step(func() {
			s.Schedule(ser64, step(func() {
				require.True(t, a.Idle(), "the first tail has left")
				if quiet {
					a.SendQuiet(packet64(s))
				} else {
					a.Send(packet64(s))
				}
			}), 0)
			a.SendQuiet(packet64(s))
		}), 0)
		s.Schedule(100, step(func() { assert.False(t, a.Idle()) }), 0)
		require.NoError(t, s.Run())
		if quiet {
			assert.Empty(t, own.at, "the owner sent: it is served")
		} else {
			assert.Equal(t, []ib.PS{2 * ser64}, own.at, "Send asks for the second packet's end")
		}
		assert.Equal(t, uint64(2), a.Stats().DataPackets)
	}
}

// heldByA has the peer send port a one packet at time 0, which a's owner
// keeps in a's buffer (it arrives within 2 m of cable's 10 ns), and returns
// its credits, for a buffer release later to owe the peer a flow-control
// packet.
func heldByA(s *components.Sim, a *Port) int {
	pkt := packet64(s)
	credits := pkt.Credits()
	s.Schedule(0, step(func() { a.Peer().Send(pkt) }), 0)
	return credits
}

// TestQuietEndSupersededByFC: an owner waits for the wire (Idle finds it
// busy); as the packet's tail leaves, a flow-control packet takes the
// wire, from a buffer release queued before the send (so it runs ahead of
// the wire's end): the owner's PortReady comes at the flow-control
// packet's end, as when every wire's end was an event (the data packet's
// end found the wire busy and the flow-control packet's end called it).
// The release frees a packet the sink side sent to this port first.
func TestQuietEndSupersededByFC(t *testing.T) {
	s, a, own, _ := quietRig(t)
	credits := heldByA(s, a)
	const t0 = ib.PS(50000)
	serFC := a.Serialization(ib.FlowControlBytes)
	s.Schedule(t0, step(func() {
		s.Schedule(t0+ser64, step(func() { a.Release(0, credits) }), 0)
		a.SendQuiet(packet64(s))
	}), 0)
	s.Schedule(t0+100, step(func() { assert.False(t, a.Idle()) }), 0)
	require.NoError(t, s.Run())
	assert.Equal(t, []ib.PS{t0 + ser64 + serFC}, own.at)
	assert.Equal(t, uint64(1), a.Stats().FCPackets)
}

// TestQuietEndBehindFC: an owner waits for the wire (Idle finds it busy),
// and a flow-control packet is owed meanwhile (a buffer release while the
// wire is busy): at the data packet's end the flow-control packet goes
// first, and the owner's PortReady comes at its end.
func TestQuietEndBehindFC(t *testing.T) {
	s, a, own, _ := quietRig(t)
	credits := heldByA(s, a)
	const t0 = ib.PS(50000)
	serFC := a.Serialization(ib.FlowControlBytes)
	s.Schedule(t0, step(func() { a.SendQuiet(packet64(s)) }), 0)
	s.Schedule(t0+100, step(func() { assert.False(t, a.Idle()) }), 0)
	s.Schedule(t0+200, step(func() { a.Release(0, credits) }), 0)
	require.NoError(t, s.Run())
	assert.Equal(t, []ib.PS{t0 + ser64 + serFC}, own.at)
	assert.Equal(t, uint64(1), a.Stats().FCPackets)
}

// TestPendingQuietsCredits: credits coming back (the peer releases the
// packet this port sent, and its flow-control packet arrives one cable
// latency and a 6-byte serialization later) call the owner's PortReady,
// unless the owner said it has nothing to send (Pending(false)); the
// credits reach the port either way. Under Sim.AllEvents every owner is
// told.
func TestPendingQuietsCredits(t *testing.T) {
	for _, c := range []struct {
		name                string
		pending, all, again bool
		wantPortReady       bool
	}{
		{"never said", true, false, false, true},
		{"nothing pending", false, false, false, false},
		{"nothing pending, then a packet", false, false, true, true},
		{"nothing pending, all events", false, true, false, true},
	} {
		s, a, own, _ := quietRig(t)
		if c.all {
			s.AllEvents()
		}
		b := a.Peer()
		full := a.CreditsAvailable(0)
		pkt := packet64(s)
		credits := pkt.Credits()
		const release = ib.PS(50000)
		s.Schedule(0, step(func() {
			a.Send(pkt)
			if !c.pending {
				a.Pending(false)
			}
			if c.again {
				a.Pending(true)
			}
		}), 0)
		s.Schedule(release, step(func() { b.Release(0, credits) }), 0)
		require.NoError(t, s.Run())
		arrive := release + a.Timing().Latency() + a.Serialization(ib.FlowControlBytes)
		want := []ib.PS{ser64} // the Send's own end
		if c.wantPortReady {
			want = append(want, arrive)
		}
		assert.Equal(t, want, own.at, c.name)
		assert.Equal(t, full, a.CreditsAvailable(0), "%s: the credits are back", c.name)
	}
}
