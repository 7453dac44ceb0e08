package hca

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// vlSink is the far end of an HCA's cable: it records each packet's head
// arrival and frees the buffer of every VL but stuck, which it never frees,
// so once stuck's credits are spent the HCA gets no more for it.
type vlSink struct {
	stuck    uint8
	arrivals []sinkArrival
}

type sinkArrival struct {
	vl, sl uint8
	qpn    uint32 // destination QP
	head   ib.PS
}

func (k *vlSink) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	k.arrivals = append(k.arrivals, sinkArrival{vl: pkt.VL, sl: pkt.SL, qpn: pkt.DestQP, head: head})
	if pkt.VL != k.stuck {
		p.Release(int(pkt.VL), pkt.Credits())
	}
}

func (k *vlSink) PortReady(*link.Port) {}

// TestStalledVLDoesNotBlockAnotherVL: an HCA port with two VLs, SL 1 on
// VL 1 and SL 0 on VL 0. QP 1 (SL 1) writes 64 KiB to a receiver that
// never frees VL 1's buffer; QP 0 (SL 0) then posts one small inline
// WRITE. Its packet must leave as it would on an idle port: the VL 1
// packets still queued (no credits) are passed by the VL arbiter, not
// waited for. (With one transmit FIFO for all VLs it never left.)
func TestStalledVLDoesNotBlockAnotherVL(t *testing.T) {
	lc := edrLink()
	// The receiver's buffer per VL: two MTU packets. A 4096-byte WRITE
	// packet is 4096 payload + LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 4122
	// bytes (4138 with the first packet's 16-byte RETH), 65 credits of 64
	// bytes either way, so 130 credits take exactly two and no third.
	const sinkBlocks = 130
	const stuckPackets = sinkBlocks / 65
	const quietPost = 20 * ib.Microsecond // VL 1 has long stalled by then

	run := func(bulk bool) (*vlSink, ib.PS, *QP, *QP) {
		s := components.NewSim()
		a := NewDevice(s, "Fabric.Host[0].HCA", 1, Defaults())
		a.SetPortQoS(PortQoS{SL2VL: [16]uint8{1: 1}}) // SL 1 on VL 1, every other SL on VL 0; no tables: round robin
		pa := a.AttachPortVLs(&lc, 2)
		sink := &vlSink{stuck: 1}
		pk := link.NewPort(s, sink, "Fabric.Host[1].Port[1]", 1, link.PortConfig{VLs: 2, BufferBlocks: sinkBlocks,
			FCRefresh: lc.FCRefresh(), FCMinInterval: lc.FCMinInterval()})
		link.Connect(pa, pk, lc.Timing(lc.LengthM))
		pd := a.AllocPD()
		buf := a.Malloc(1 << 16)
		mr := a.RegMR(pd, buf, 1<<16, AccessLocalWrite)
		connect := func(sl uint8, destQPN uint32) *QP {
			qp := a.CreateQP(pd, a.CreateCQ(64), a.CreateCQ(64), 64, 64)
			for _, attr := range []QPAttr{{State: QPInit},
				{State: QPRTR, MTU: lc.MTU, DestLID: 2, DestQPN: destQPN, SL: sl}, {State: QPRTS}} {
				require.NoError(t, a.ModifyQP(qp, attr))
			}
			return qp
		}
		quiet, loud := connect(0, 0x500), connect(1, 0x501)
		if bulk {
			require.NoError(t, a.PostSend(loud, &SendWR{Opcode: WRRDMAWrite, LocalAddr: buf, Length: 1 << 16,
				LKey: mr.LKey, RemoteAddr: 0x1000, RKey: 0x100}))
		}
		s.Schedule(quietPost, &poster{fn: func() {
			require.NoError(t, a.PostSend(quiet, &SendWR{Opcode: WRRDMAWrite, Inline: true, LocalAddr: buf, Length: 8,
				RemoteAddr: 0x1000, RKey: 0x100}))
		}}, 1)
		s.StopAt(2 * quietPost)
		require.NoError(t, s.Run())
		var quietHead ib.PS
		for _, x := range sink.arrivals {
			if x.qpn == 0x500 {
				quietHead = x.head
			}
		}
		return sink, quietHead, quiet, loud
	}

	idle, idleHead, _, _ := run(false)
	require.Len(t, idle.arrivals, 1)
	loaded, loadedHead, quiet, loud := run(true)
	require.NotZero(t, loadedHead, "the SL 0 packet never left: VL 1's stall blocked it")
	// The quiet WRITE shares nothing with the stalled VL by then: the
	// stages and PCIe finished VL 1's reads long before 20 µs, the wire
	// is idle (VL 1 has no credits), so its head arrives at the same time
	// as on an idle port, to the picosecond.
	assert.Equal(t, idleHead, loadedHead)
	var onVL [2]int
	for _, x := range loaded.arrivals {
		onVL[x.vl]++
		want := map[uint32]uint8{0x500: 0, 0x501: 1}[x.qpn]
		assert.Equal(t, want, x.sl, "the LRH carries the QP's SL")
		assert.Equal(t, want, x.vl, "SL-to-VL: SL 0 on VL 0, SL 1 on VL 1")
	}
	assert.Equal(t, [2]int{1, stuckPackets}, onVL, "VL 1 sent what the receiver's buffer holds, then stalled")
	assert.Equal(t, uint8(0), quiet.SL())
	assert.Equal(t, uint8(1), loud.SL())
	assert.Equal(t, uint8(1), loud.VL())
}

// TestSLToVL15Refused: a QP whose SL the port maps to VL 15, or to a VL
// the port lacks, cannot reach RTR.
func TestSLToVL15Refused(t *testing.T) {
	lc := edrLink()
	s := components.NewSim()
	a := NewDevice(s, "Fabric.Host[0].HCA", 1, Defaults())
	a.SetPortQoS(PortQoS{SL2VL: [16]uint8{2: 15, 3: 1}})
	a.AttachPort(&lc) // one data VL
	for _, c := range []struct {
		sl   uint8
		want string
	}{
		{2, "qp 0x%x: SL 2 maps to VL 15 (drop) in Fabric.Host[0].HCA's SL-to-VL table; a data SL needs a data VL"},
		{3, "qp 0x%x: SL 3 maps to VL 1, but Fabric.Host[0].HCA.Port[1] has 1 data VLs"},
		{16, "qp 0x%x: SL 16 is not a service level (0 to 15)"},
	} {
		pd := a.AllocPD()
		qp := a.CreateQP(pd, a.CreateCQ(2), a.CreateCQ(2), 1, 1)
		require.NoError(t, a.ModifyQP(qp, QPAttr{State: QPInit}))
		err := a.ModifyQP(qp, QPAttr{State: QPRTR, MTU: 4096, DestLID: 2, SL: c.sl})
		assert.EqualError(t, err, fmt.Sprintf(c.want, qp.Num))
		assert.Equal(t, QPInit, qp.State, "a refused modify leaves the QP where it was")
	}
}

// TestTxPortRoundRobin: with no arbitration tables the port takes the
// ready VLs in turn from its pointer, which moves past each VL picked.
func TestTxPortRoundRobin(t *testing.T) {
	var p txPort
	ready := uint16(1<<0 | 1<<3 | 1<<14)
	var got []int
	for range 6 {
		got = append(got, p.pick(ready))
	}
	assert.Equal(t, []int{0, 3, 14, 0, 3, 14}, got)
	p.rr = 4
	assert.Equal(t, 14, p.pick(ready))
	assert.Equal(t, 0, p.rr, "past VL 14 the pointer wraps to 0")
}
