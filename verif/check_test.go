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
	assert.Equal(t, uint64(4), b.dst.port.Stats.RxPackets)
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
		chk.Observe(ev(ib.PS(i), "P", components.TraceTxStart, fI("vl", 0)))
	}
	chk.Observe(ev(6, "P", components.TraceCreditUpdate, fI("vl", 0), fI("avail", -1)))
	require.Error(t, chk.Err())
	r := chk.Violations()[0].Recent
	require.Len(t, r, 3)
	// Oldest first: the last three events are times 4, 5 and 6 (the offender).
	assert.Equal(t, []ib.PS{4, 5, 6}, []ib.PS{r[0].Time, r[1].Time, r[2].Time})
	assert.True(t, strings.HasSuffix(chk.Err().Error(), "6 P credit_update vl=0 avail=-1"))
}
