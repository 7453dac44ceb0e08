package verif

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// qdr4x is a QDR 4x copper link of 2 m without FEC: data rate 4 lanes ×
// 10 Gb/s × 8/10 = 32 Gb/s (ib-facts §1), flight time 2 m × 4276 ps/m.
func qdr4x() link.Timing { return link.NewTiming(link.QDR, 4, 0, 2, link.CopperPsPerM) }

func TestCheckersCleanRun(t *testing.T) {
	cfg := &benchConfig{Timing: qdr4x(), BufferBlocks: 4, HoldPS: 100 * ib.Nanosecond}
	for psn := uint32(0); psn < 4; psn++ {
		cfg.Packets = append(cfg.Packets, writePacket(psn, 64))
	}
	b := newBench(cfg)
	chk := AttachCheckers(CheckConfig{OnViolation: func(*Violation) { b.s.Stop() }}, b.hookables()...)
	require.NoError(t, b.s.Run())
	chk.Finish(b.s.Now(), true)
	assert.NoError(t, chk.Err())
	assert.Equal(t, uint64(4), b.dst.port.Stats().RxPackets)
}

func TestCheckersCatchCreditReturnedTwice(t *testing.T) {
	// Buffer of 4 blocks, packets of 2 blocks (106 B): packets 1 and 2 are
	// both in the sink's buffer when packet 1's credits go back twice. The
	// real credit counter does not notice (free 0 → 2 → 4 ≤ 4); the checker
	// does, because packet 1 leaves a buffer it has already left.
	cfg := &benchConfig{Timing: qdr4x(), BufferBlocks: 4, HoldPS: 100 * ib.Nanosecond, doubleRelease: 1}
	for psn := uint32(0); psn < 4; psn++ {
		cfg.Packets = append(cfg.Packets, writePacket(psn, 64))
	}
	b := newBench(cfg)
	chk := AttachCheckers(CheckConfig{Recent: 4, OnViolation: func(*Violation) { b.s.Stop() }}, b.hookables()...)
	require.NoError(t, b.s.Run())
	require.Error(t, chk.Err())
	v := chk.Violations()[0]
	assert.Equal(t, InvCredit, v.Invariant)
	assert.Equal(t, "Bench.Dst.Port[0]", v.Path)
	assert.Contains(t, v.Detail, "packet seq 1 left a buffer it is not in: its credits returned twice")
	// The report ends with the offending event and shows the events before it.
	require.Len(t, v.Recent, 4)
	last := v.Recent[3]
	assert.Equal(t, components.TraceBufDeq, last.Kind)
	assert.Equal(t, v.Time, last.Time)
	assert.Contains(t, v.Error(), "last 4 events:\n  ")
}

func TestCheckersCatchDroppedPacket(t *testing.T) {
	// Three packets, PSNs 0, 1, 2 (seqs 1, 2, 3). Dropping the middle one is
	// seen at once by the ordering checker (PSN 2 arrives when 1 is
	// expected) and at the end by the lossless one; dropping the last one
	// only at the end.
	cases := []struct {
		drop      int64
		first     string
		firstText string
	}{
		{2, InvOrdering, "QP 17 request PSN 2 arrived, expected 1 (a gap of 1)"},
		{3, InvLossless, "1 packets injected and never delivered; first seq 3 (qpn 17 psn 2)"},
	}
	for _, c := range cases {
		cfg := &benchConfig{Timing: qdr4x(), BufferBlocks: 4, HoldPS: 0, dropSeq: c.drop}
		for psn := uint32(0); psn < 3; psn++ {
			cfg.Packets = append(cfg.Packets, writePacket(psn, 64))
		}
		b := newBench(cfg)
		chk := AttachCheckers(CheckConfig{}, b.hookables()...)
		require.NoError(t, b.s.Run())
		chk.Finish(b.s.Now(), true)
		require.Error(t, chk.Err())
		vs := chk.Violations()
		assert.Equal(t, c.first, vs[0].Invariant)
		assert.Contains(t, vs[0].Detail, c.firstText)
		last := vs[len(vs)-1]
		assert.Equal(t, InvLossless, last.Invariant)
		assert.Contains(t, last.Detail, "never delivered; first seq "+strconv.FormatInt(c.drop, 10))
	}
}

// ev builds a synthetic event for the table tests.
func ev(t ib.PS, path string, kind components.TraceKind, fields ...components.TraceField) *components.TraceEvent {
	return &components.TraceEvent{Time: t, Path: path, Kind: kind, Fields: fields}
}

var (
	fI = components.IntField
	fS = components.StrField
)

func pktFields(seq, psn, icrc int64, op string) []components.TraceField {
	return []components.TraceField{fI("seq", seq), fI("vl", 0), fI("slid", 1), fI("dlid", 2), fS("op", op), fI("qpn", 9), fI("psn", psn), fI("icrc", icrc)}
}

// flow returns an inject at A then a deliver at R of the same packet.
func flow(t ib.PS, seq, psn int64, op string, extra ...components.TraceField) []*components.TraceEvent {
	f := append(pktFields(seq, psn, 0, op), extra...)
	return []*components.TraceEvent{ev(t-1, "A", components.TraceInject, f...), ev(t, "R", components.TraceDeliver, f...)}
}

func cat(parts ...[]*components.TraceEvent) []*components.TraceEvent {
	var out []*components.TraceEvent
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestCheckersSyntheticTable(t *testing.T) {
	const wr = "RDMA_WRITE_ONLY"
	cases := []struct {
		name      string
		events    []*components.TraceEvent
		invariant string // "" = no violation
		detail    string
	}{
		{"corrupted icrc", []*components.TraceEvent{
			ev(1, "A", components.TraceInject, pktFields(1, 0, 0xab, wr)...),
			ev(2, "B", components.TraceDeliver, pktFields(1, 0, 0xac, wr)...),
		}, InvLossless, "packet seq 1 corrupted: icrc injected 171, delivered 172"},
		{"delivered twice", []*components.TraceEvent{
			ev(1, "A", components.TraceInject, pktFields(1, 0, 5, wr)...),
			ev(2, "B", components.TraceDeliver, pktFields(1, 0, 5, wr)...),
			ev(3, "B", components.TraceDeliver, pktFields(1, 0, 5, wr)...),
		}, InvLossless, "packet seq 1 delivered twice"},
		{"never injected", []*components.TraceEvent{
			ev(2, "B", components.TraceDeliver, pktFields(4, 0, 5, wr)...),
		}, InvLossless, "packet seq 4 delivered but never injected"},
		{"drop", []*components.TraceEvent{
			ev(2, "S", components.TraceDrop, fI("seq", 3), fS("reason", "vl15")),
		}, InvLossless, `packet seq 3 dropped (reason "vl15")`},
		{"buffer above size", []*components.TraceEvent{
			ev(1, "S", components.TraceBufEnq, fI("seq", 1), fI("vl", 0), fI("credits", 3), fI("occ", 3), fI("cap", 4)),
			ev(2, "S", components.TraceBufEnq, fI("seq", 2), fI("vl", 0), fI("credits", 3), fI("occ", 6), fI("cap", 4)),
		}, InvBuffer, "buffer occupancy 6 outside 0..4"},
		{"buffer accounting", []*components.TraceEvent{
			ev(1, "S", components.TraceBufEnq, fI("seq", 1), fI("vl", 0), fI("credits", 3), fI("occ", 2), fI("cap", 8)),
		}, InvBuffer, "model says 2 blocks used, its packets hold 3"},
		{"negative credit", []*components.TraceEvent{
			ev(1, "S", components.TraceCreditUpdate, fI("vl", 1), fI("avail", -2), fI("cap", 8)),
		}, InvCredit, "credit count -2 is negative"},
		{"credit above peer buffer", []*components.TraceEvent{
			ev(1, "S", components.TraceCreditUpdate, fI("vl", 1), fI("avail", 9), fI("cap", 8)),
		}, InvCredit, "credit count 9 above the peer's buffer of 8 blocks"},
		{"psn in order, then retry allowed", cat(
			flow(10, 1, 10, wr), flow(20, 2, 11, wr),
			flow(30, 3, 10, wr), // duplicate PSN: a retry
		), "", ""},
		{"psn gap", cat(flow(10, 1, 10, wr), flow(20, 2, 12, wr)),
			InvOrdering, "QP 9 request PSN 12 arrived, expected 11 (a gap of 1)"},
		// The connection's first request (PSN 10) is overtaken by its
		// second: the responder's first request is PSN 11, one ahead.
		{"first requests reordered", []*components.TraceEvent{
			ev(1, "A", components.TraceInject, pktFields(1, 10, 0, wr)...),
			ev(2, "A", components.TraceInject, pktFields(2, 11, 0, wr)...),
			ev(3, "R", components.TraceDeliver, pktFields(2, 11, 0, wr)...),
		}, InvOrdering, "QP 9 request PSN 11 arrived, expected 10 (a gap of 1)"},
		// A injects with slid 1, so it is LID 1; a packet for dlid 2 is not its.
		{"delivered at the sender", []*components.TraceEvent{
			ev(1, "A", components.TraceInject, pktFields(1, 0, 0, wr)...),
			ev(2, "A", components.TraceDeliver, pktFields(1, 0, 0, wr)...),
		}, InvLossless, "packet seq 1 for dlid 2 delivered at A, whose LID is 1 (misrouted)"},
		{"two blocks take one dlid", cat(flow(10, 1, 0, wr), []*components.TraceEvent{
			ev(19, "A", components.TraceInject, pktFields(2, 1, 0, wr)...),
			ev(20, "Q", components.TraceDeliver, pktFields(2, 1, 0, wr)...),
		}), InvLossless, "packet seq 2 for dlid 2 delivered at Q, but dlid 2's packets were delivered at R (misrouted)"},
		{"psn wraps at 2^24", cat(flow(10, 1, 1<<24-1, wr), flow(20, 2, 0, wr)), "", ""},
		// An RDMA READ of 3 PMTUs uses PSNs 5, 6, 7; the next request is 8.
		{"read request consumes psns", cat(flow(10, 1, 5, "RDMA_READ_REQUEST", fI("psns", 3)), flow(20, 2, 8, wr)), "", ""},
		{"acks are not requests", cat(flow(10, 1, 5, "ACKNOWLEDGE"), flow(20, 2, 9, "ACKNOWLEDGE")), "", ""},
		{"completion out of order", []*components.TraceEvent{
			ev(1, "H", components.TraceCQE, fI("qpn", 3), fS("queue", "sq"), fI("wqe", 4), fS("status", "success")),
			ev(2, "H", components.TraceCQE, fI("qpn", 3), fS("queue", "rq"), fI("wqe", 1), fS("status", "success")),
			ev(3, "H", components.TraceCQE, fI("qpn", 3), fS("queue", "sq"), fI("wqe", 2), fS("status", "success")),
		}, InvOrdering, "QP 3 sq completion for WQE 2 after WQE 4"},
		{"completion counter wraps", []*components.TraceEvent{
			ev(1, "H", components.TraceCQE, fI("qpn", 3), fS("queue", "sq"), fI("wqe", 65535), fS("status", "success")),
			ev(2, "H", components.TraceCQE, fI("qpn", 3), fS("queue", "sq"), fI("wqe", 0), fS("status", "success")),
		}, "", ""},
		{"completion without queue is not checked", []*components.TraceEvent{
			ev(1, "H", components.TraceCQE, fI("qpn", 3), fI("wqe", 4), fS("status", "success")),
			ev(2, "H", components.TraceCQE, fI("qpn", 3), fI("wqe", 1), fS("status", "success")),
		}, "", ""},
		{"write inside passed key", []*components.TraceEvent{
			ev(1, "H", components.TraceKeyCheck, fI("qpn", 3), fI("key", 77), fI("addr", 0x1000), fI("len", 4096), fS("result", "pass")),
			ev(2, "H", components.TraceDMAWrite, fI("qpn", 3), fI("addr", 0x1800), fI("len", 2048)),
		}, "", ""},
		{"write past the key's range", []*components.TraceEvent{
			ev(1, "H", components.TraceKeyCheck, fI("qpn", 3), fI("key", 77), fI("addr", 0x1000), fI("len", 4096), fS("result", "pass")),
			ev(2, "H", components.TraceDMAWrite, fI("qpn", 3), fI("addr", 0x1800), fI("len", 2049)),
		}, InvProtection, "QP 3 wrote 2049 bytes at 0x1800 with no passed key check covering them"},
		{"write after a failed key check", []*components.TraceEvent{
			ev(1, "H", components.TraceKeyCheck, fI("qpn", 3), fI("key", 77), fI("addr", 0x1000), fI("len", 4096), fS("result", "pass")),
			ev(2, "H", components.TraceKeyCheck, fI("qpn", 3), fI("key", 78), fI("addr", 0x1000), fI("len", 64), fS("result", "fail")),
			ev(3, "H", components.TraceDMAWrite, fI("qpn", 3), fI("addr", 0x1000), fI("len", 64)),
		}, InvProtection, "QP 3 wrote 64 bytes at 0x1000"},
		{"key check without a range covers the QP", []*components.TraceEvent{
			ev(1, "H", components.TraceKeyCheck, fI("qpn", 3), fI("key", 77), fS("result", "pass")),
			ev(2, "H", components.TraceDMAWrite, fI("qpn", 3), fI("addr", 0x9000), fI("len", 64)),
		}, "", ""},
		{"key on another QP does not count", []*components.TraceEvent{
			ev(1, "H", components.TraceKeyCheck, fI("qpn", 4), fI("key", 77), fI("addr", 0x1000), fI("len", 4096), fS("result", "pass")),
			ev(2, "H", components.TraceDMAWrite, fI("qpn", 3), fI("addr", 0x1000), fI("len", 64)),
		}, InvProtection, "QP 3 wrote 64 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk := NewCheckers(CheckConfig{})
			for _, e := range c.events {
				chk.Observe(e)
			}
			if c.invariant == "" {
				assert.NoError(t, chk.Err())
				return
			}
			require.Error(t, chk.Err())
			v := chk.Violations()[0]
			assert.Equal(t, c.invariant, v.Invariant)
			assert.Contains(t, v.Detail, c.detail)
			assert.Equal(t, c.events[len(c.events)-1].Time, v.Time)
		})
	}
}

func TestCheckersFinishCredits(t *testing.T) {
	chk := NewCheckers(CheckConfig{})
	chk.Observe(ev(1, "P", components.TraceCreditUpdate, fI("vl", 0), fI("avail", 6), fI("cap", 8)))
	chk.Observe(ev(1, "P", components.TraceCreditUpdate, fI("vl", 1), fI("avail", 8), fI("cap", 8)))
	chk.Finish(100, false)
	assert.NoError(t, chk.Err(), "a busy fabric may hold credits")
	chk.Finish(100, true)
	require.Error(t, chk.Err())
	assert.Equal(t, "P vl=0", chk.Violations()[0].Path)
	assert.Contains(t, chk.Violations()[0].Detail, "6 credits available of 8 (last change at 1 ps): credits leaked")
	assert.Len(t, chk.Violations(), 1)
}

// wirePkt is packet seq's vl and wire bytes, the fields a tx_start and its
// tx_end share.
func wirePkt(seq int64) []components.TraceField {
	return []components.TraceField{fI("seq", seq), fI("vl", 0), fI("bytes", 106)}
}

func TestCheckersWire(t *testing.T) {
	// 106 wire bytes on QDR 4x (32 Gb/s data rate, qdr4x) take
	// 106 × 8 / 32 ns = 26.5 ns: a packet started at 0 ends at 26500 ps.
	ser := qdr4x().Serialization(106)
	require.Equal(t, ib.PS(26500), ser)
	start := func(at ib.PS, path string, seq int64) *components.TraceEvent {
		return ev(at, path, components.TraceTxStart, wirePkt(seq)...)
	}
	end := func(at ib.PS, path string, seq int64) *components.TraceEvent {
		return ev(at, path, components.TraceTxEnd, wirePkt(seq)...)
	}
	fc := func(at ib.PS, path string) *components.TraceEvent {
		return ev(at, path, components.TraceFCSend, fI("vl", 0), fI("fctbs", 2), fI("fccl", 4), fI("free", 4), fI("cap", 4), fI("occ", 0))
	}
	cases := []struct {
		name      string
		events    []*components.TraceEvent
		idle      bool   // call Finish(now, true) after the events
		invariant string // "" = no violation
		detail    string
	}{
		{"clean: back to back, a flow-control packet between, two ports", []*components.TraceEvent{
			start(0, "P", 1), start(0, "Q", 7),
			end(ser, "P", 1),
			// The next packet starts in the picosecond the last one's tail
			// left: the port writes the owed tx_end first.
			start(ser, "P", 2), end(ser, "Q", 7),
			end(2*ser, "P", 2),
			fc(2*ser, "P"),
			start(3*ser, "P", 3), end(4*ser, "P", 3),
		}, true, "", ""},
		{"missing tx_end", []*components.TraceEvent{
			start(0, "P", 1), start(ser, "P", 2),
		}, false, InvWire, "packet seq 2 started while packet seq 1 (tx_start at 0 ps) has no tx_end"},
		{"two packets at once", []*components.TraceEvent{
			start(0, "P", 1), end(ser, "P", 1), start(ser-1, "P", 2),
		}, false, InvWire, "packet seq 2 started at 26499 ps while packet seq 1 was on the wire until 26500 ps: two packets at once"},
		{"tx_end before tx_start", []*components.TraceEvent{
			start(ser, "P", 1), end(0, "P", 1),
		}, false, InvWire, "packet seq 1 ended at 0 ps, before it started at 26500 ps"},
		{"tx_end twice", []*components.TraceEvent{
			start(0, "P", 1), end(ser, "P", 1), end(ser, "P", 1),
		}, false, InvWire, "packet seq 1 ended twice"},
		{"tx_end with nothing started", []*components.TraceEvent{
			end(ser, "P", 1),
		}, false, InvWire, "tx_end of packet seq 1 with no packet on the wire"},
		{"tx_end of another packet", []*components.TraceEvent{
			start(0, "P", 1), end(ser, "P", 2),
		}, false, InvWire, "tx_end of packet seq 2 while packet seq 1 is on the wire"},
		{"tx_end with other bytes", []*components.TraceEvent{
			start(0, "P", 1), ev(ser, "P", components.TraceTxEnd, fI("seq", 1), fI("vl", 0), fI("bytes", 170)),
		}, false, InvWire, "packet seq 1 started as vl 0 of 106 bytes, ended as vl 0 of 170 bytes"},
		{"another port's tx_end does not close the wire", []*components.TraceEvent{
			start(0, "P", 1), end(ser, "Q", 1),
		}, false, InvWire, "tx_end of packet seq 1 with no packet on the wire"},
		{"flow-control packet during a data packet", []*components.TraceEvent{
			start(0, "P", 1), fc(ser/2, "P"),
		}, false, InvWire, "flow-control packet for VL 0 started while packet seq 1 (tx_start at 0 ps) has no tx_end"},
		{"flow-control packet before the last tail left", []*components.TraceEvent{
			start(0, "P", 1), end(ser, "P", 1), fc(ser-1, "P"),
		}, false, InvWire, "flow-control packet for VL 0 started at 26499 ps while packet seq 1 was on the wire until 26500 ps: two packets at once"},
		{"a busy fabric may end with a packet on the wire", []*components.TraceEvent{
			start(0, "P", 1),
		}, false, "", ""},
		{"an idle fabric may not", []*components.TraceEvent{
			start(0, "Q", 4), start(0, "P", 1), end(ser, "Q", 4), start(ser, "R", 9),
		}, true, InvWire, "idle fabric: 2 packets still on a wire; first seq 1, tx_start at 0 ps and no tx_end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk := NewCheckers(CheckConfig{})
			for _, e := range c.events {
				chk.Observe(e)
			}
			last := c.events[len(c.events)-1]
			now := last.Time
			if c.idle {
				now = 10 * ser
				chk.Finish(now, true)
			}
			if c.invariant == "" {
				assert.NoError(t, chk.Err())
				return
			}
			require.Error(t, chk.Err())
			require.Len(t, chk.Violations(), 1)
			v := chk.Violations()[0]
			assert.Equal(t, c.invariant, v.Invariant)
			assert.Equal(t, c.detail, v.Detail)
			assert.Equal(t, now, v.Time)
			if !c.idle {
				assert.Equal(t, last.Path, v.Path)
			} else {
				assert.Equal(t, "P", v.Path, "the first path in name order")
			}
		})
	}
}

func TestCompareData(t *testing.T) {
	chk := NewCheckers(CheckConfig{})
	chk.CompareData(5, "H", "write qp 3", []byte{1, 2, 3}, []byte{1, 2, 3})
	assert.NoError(t, chk.Err())
	chk.CompareData(6, "H", "write qp 3", []byte{1, 2, 3}, []byte{1, 9, 3})
	require.Error(t, chk.Err())
	assert.Equal(t, InvIntegrity, chk.Violations()[0].Invariant)
	assert.Contains(t, chk.Err().Error(), "write qp 3: byte 1 is 0x09 at the destination, 0x02 at the source")
	chk.CompareData(7, "H", "short", []byte{1, 2}, []byte{1})
	assert.Contains(t, chk.Violations()[1].Detail, "source has 2 bytes, destination 1")
}

func TestRecentRingOrder(t *testing.T) {
	chk := NewCheckers(CheckConfig{Recent: 3})
	for i := 1; i <= 5; i++ {
		chk.Observe(ev(ib.PS(i), "P", components.TraceRxHead, fI("vl", 0)))
	}
	chk.Observe(ev(6, "P", components.TraceCreditUpdate, fI("vl", 0), fI("avail", -1)))
	require.Error(t, chk.Err())
	r := chk.Violations()[0].Recent
	require.Len(t, r, 3)
	// Oldest first: the last three events are times 4, 5 and 6 (the offender).
	assert.Equal(t, []ib.PS{4, 5, 6}, []ib.PS{r[0].Time, r[1].Time, r[2].Time})
	assert.True(t, strings.HasSuffix(chk.Err().Error(), "6 P credit_update vl=0 avail=-1"))
}

// TestEvFieldsMatchTraceEvent holds the checkers' one-pass field reader to
// TraceEvent.Int and Str, which it replaced: a key counts at its first
// occurrence, and only with its own type.
func TestEvFieldsMatchTraceEvent(t *testing.T) {
	events := []*components.TraceEvent{
		ev(1, "P", components.TraceDeliver, pktFields(3, 7, 99, "RDMA_WRITE_ONLY")...),
		ev(1, "P", components.TraceBufEnq, fI("seq", 1), fI("seq", 2), fS("vl", "0"), fI("vl", 3), fI("occ", -1), fI("cap", 4)),
		ev(1, "P", components.TraceCQE, fS("qpn", "x"), fI("qpn", 5), fI("queue", 2), fS("queue", "sq"), fS("op", "A"), fS("op", "B")),
		ev(1, "P", components.TraceKeyCheck, fI("result", 1), fI("addr", -4), fI("len", 0), fS("reason", "r"), fI("psns", 2), fI("avail", 0), fI("credits", 6), fI("bytes", 7), fI("wqe", 8), fI("icrc", 9)),
		ev(1, "P", components.TraceDrop),
	}
	ints := map[string]func(*evFields) (int64, bool){
		"seq": func(f *evFields) (int64, bool) { return f.seq, f.ok(fSeq) }, "vl": func(f *evFields) (int64, bool) { return f.vl, f.ok(fVL) },
		"slid": func(f *evFields) (int64, bool) { return f.slid, f.ok(fSLID) }, "dlid": func(f *evFields) (int64, bool) { return f.dlid, f.ok(fDLID) },
		"qpn": func(f *evFields) (int64, bool) { return f.qpn, f.ok(fQPN) }, "psn": func(f *evFields) (int64, bool) { return f.psn, f.ok(fPSN) },
		"psns": func(f *evFields) (int64, bool) { return f.psns, f.ok(fPSNs) }, "icrc": func(f *evFields) (int64, bool) { return f.icrc, f.ok(fICRC) },
		"avail": func(f *evFields) (int64, bool) { return f.avail, f.ok(fAvail) }, "occ": func(f *evFields) (int64, bool) { return f.occ, f.ok(fOcc) },
		"cap": func(f *evFields) (int64, bool) { return f.capBlocks, f.ok(fCap) }, "credits": func(f *evFields) (int64, bool) { return f.credits, f.ok(fCredits) },
		"bytes": func(f *evFields) (int64, bool) { return f.bytes, f.ok(fBytes) }, "addr": func(f *evFields) (int64, bool) { return f.addr, f.ok(fAddr) },
		"len": func(f *evFields) (int64, bool) { return f.length, f.ok(fLen) }, "wqe": func(f *evFields) (int64, bool) { return f.wqe, f.ok(fWQE) },
	}
	strs := map[string]func(*evFields) (string, bool){
		"op": func(f *evFields) (string, bool) { return f.op, f.hasOp }, "queue": func(f *evFields) (string, bool) { return f.queue, f.hasQueue },
		"result": func(f *evFields) (string, bool) { return f.result, f.hasResult }, "reason": func(f *evFields) (string, bool) { return f.reason, f.hasReason },
	}
	for i, e := range events {
		var f evFields
		f.parse(e)
		for key, get := range ints {
			want, wantOK := e.Int(key)
			got, gotOK := get(&f)
			assert.Equal(t, wantOK, gotOK, "event %d %s", i, key)
			if wantOK {
				assert.Equal(t, want, got, "event %d %s", i, key)
			}
		}
		for key, get := range strs {
			want, wantOK := e.Str(key)
			got, gotOK := get(&f)
			assert.Equal(t, wantOK, gotOK, "event %d %s", i, key)
			assert.Equal(t, want, got, "event %d %s", i, key)
		}
	}
}

// TestCheckersFinishOrder: the end-of-run reports name the first path by
// name, not by the order paths were first seen, and count credits on any
// vl, a real one or not (the checkers keep VLs 0-15 in a slice, the rest
// in a map).
func TestCheckersFinishOrder(t *testing.T) {
	chk := NewCheckers(CheckConfig{})
	for _, e := range []*components.TraceEvent{
		ev(1, "Z", components.TraceCreditUpdate, fI("vl", 0), fI("avail", 2), fI("cap", 8)),
		ev(2, "A", components.TraceCreditUpdate, fI("vl", 20), fI("avail", 9), fI("cap", 8)),
		ev(3, "A", components.TraceCreditUpdate, fI("avail", 1), fI("cap", 8)),
		ev(4, "A", components.TraceCreditUpdate, fI("vl", 1), fI("avail", 8), fI("cap", 8)),
		ev(5, "Z", components.TraceBufEnq, fI("seq", 1), fI("vl", 0), fI("credits", 2)),
		ev(6, "A", components.TraceBufEnq, fI("seq", 7), fI("vl", 0), fI("credits", 2)),
		ev(7, "A", components.TraceBufEnq, fI("seq", 3), fI("vl", 0), fI("credits", 2)),
	} {
		chk.Observe(e)
	}
	assert.Error(t, chk.Err(), "avail 9 above cap 8 on vl 20")
	chk.Finish(100, true)
	var got []string
	for _, v := range chk.Violations()[1:] {
		got = append(got, v.Path+": "+v.Detail)
	}
	assert.Equal(t, []string{
		"A: idle fabric: 3 packets still in buffers; first seq 3",
		"A vl=-1: idle fabric: 1 credits available of 8 (last change at 3 ps): credits leaked (never returned)",
		"A vl=20: idle fabric: 9 credits available of 8 (last change at 2 ps): credits returned twice",
		"Z vl=0: idle fabric: 2 credits available of 8 (last change at 1 ps): credits leaked (never returned)",
	}, got)
}

// TestCheckersLinkDiscards: a drop with reason vcrc is a link discarding a
// corrupted packet (link.ber > 0): the packet is lost, not missing, and its
// request PSN may be a gap at the responder until it is resent. Every other
// loss, duplicate or change is still a violation.
func TestCheckersLinkDiscards(t *testing.T) {
	const wr = "RDMA_WRITE_ONLY"
	inject := func(at ib.PS, seq, psn int64) *components.TraceEvent {
		return ev(at, "A", components.TraceInject, pktFields(seq, psn, 0, wr)...)
	}
	deliver := func(at ib.PS, seq, psn int64) *components.TraceEvent {
		return ev(at, "R", components.TraceDeliver, pktFields(seq, psn, 0, wr)...)
	}
	discard := func(at ib.PS, seq, psn int64) *components.TraceEvent {
		return ev(at, "S.Port[1]", components.TraceDrop, append(pktFields(seq, psn, 0, wr), fS("reason", components.DropVCRC))...)
	}
	cases := []struct {
		name      string
		events    []*components.TraceEvent
		invariant string // "" = no violation, at the end either
		detail    string
	}{
		// PSN 10 is lost, 11 arrives (a gap the loss explains), the
		// requester resends 10 and 11 (new seqs): all accounted for.
		{"discard, gap, resend", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 10), inject(3, 2, 11), deliver(4, 2, 11),
			inject(5, 3, 10), deliver(6, 3, 10), inject(7, 4, 11), deliver(8, 4, 11),
		}, "", ""},
		{"a resend lost again keeps the gap allowed", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 10), inject(3, 2, 10), discard(4, 2, 10),
			inject(5, 3, 11), deliver(6, 3, 11), inject(7, 4, 10), deliver(8, 4, 10),
		}, "", ""},
		{"a flow-control packet lost is no loss", []*components.TraceEvent{
			ev(1, "S.Port[1]", components.TraceDrop, fI("vl", 0), fI("fctbs", 7), fI("fccl", 99), fS("reason", components.DropLPCRC)),
		}, "", ""},
		// Seq 2 vanishes without a drop: the announced discard of seq 1
		// does not cover it.
		{"silent drop beside a discard", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 10), inject(3, 2, 11),
			inject(5, 3, 10), deliver(6, 3, 10),
		}, InvLossless, "1 packets injected and never delivered; first seq 2 (qpn 9 psn 11)"},
		// After the resent PSN 10 closes the first gap, a gap at 11 (lost
		// silently) is a gap again.
		{"gap at a PSN no link lost", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 10), inject(3, 2, 11), inject(4, 3, 12), deliver(5, 3, 12),
			inject(6, 4, 10), deliver(7, 4, 10), inject(8, 5, 12), deliver(9, 5, 12),
		}, InvOrdering, "QP 9 request PSN 12 arrived, expected 11 (a gap of 1)"},
		{"delivered after its discard", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 10), deliver(3, 1, 10),
		}, InvLossless, "packet seq 1 delivered after a link discarded it"},
		{"discarded after its delivery", []*components.TraceEvent{
			inject(1, 1, 10), deliver(2, 1, 10), discard(3, 1, 10),
		}, InvLossless, "packet seq 1 discarded by a link after it was delivered"},
		{"discarded twice", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 10), discard(3, 1, 10),
		}, InvLossless, "packet seq 1 discarded by a link twice"},
		{"discard of a packet never injected", []*components.TraceEvent{
			discard(2, 7, 10),
		}, InvLossless, "packet seq 7 discarded by a link but never injected"},
		{"discard of a changed packet", []*components.TraceEvent{
			inject(1, 1, 10), discard(2, 1, 11),
		}, InvLossless, "packet seq 1 changed before a link discarded it: psn injected 10, discarded 11"},
		{"any other drop reason is still a loss", []*components.TraceEvent{
			inject(1, 1, 10), ev(2, "S", components.TraceDrop, append(pktFields(1, 10, 0, wr), fS("reason", "vl15"))...),
		}, InvLossless, `packet seq 1 dropped (reason "vl15")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk := NewCheckers(CheckConfig{})
			for _, e := range c.events {
				chk.Observe(e)
			}
			chk.Finish(100, true)
			if c.invariant == "" {
				assert.NoError(t, chk.Err())
				return
			}
			require.Error(t, chk.Err())
			v := chk.Violations()[0]
			assert.Equal(t, c.invariant, v.Invariant)
			assert.Contains(t, v.Detail, c.detail)
		})
	}
}
