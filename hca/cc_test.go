package hca

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/ib"
)

// writeTime runs one RDMA WRITE of n bytes from A to B back to back (EDR,
// cx7: its PCIe Gen5 x16 reads far faster than the 100 Gb/s link, so the
// wire sets the pace) and returns when its send completion arrived. With
// ccMin ≥ 0, A has congestion control with CCTI_Min ccMin: its QP starts
// at that index, with no BECN needed.
func writeTime(t *testing.T, n int, ccMin int) (ib.PS, *pair) {
	cfg, err := Profile("cx7")
	require.NoError(t, err)
	lc := edrLink()
	p := newPair(t, lc, cfg, n)
	if ccMin >= 0 {
		c := cc.Defaults()
		c.CCTIMin = ccMin
		require.NoError(t, c.Validate())
		mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}
		params := c.Resolve(lc.Timing(lc.LengthM).Serialization(mtu.WireBytes()))
		p.a.EnableCC(&params)
	}
	require.NoError(t, p.a.PostSend(p.qa, &SendWR{ID: 1, Opcode: WRRDMAWrite, Signaled: true,
		LocalAddr: p.bufA, Length: uint32(n), LKey: p.mrA.LKey, RemoteAddr: p.bufB, RKey: p.mrB.RKey}))
	var wcs [2]WC
	k := 0
	var at ib.PS
	p.runUntil(t, func() bool {
		k += p.a.PollCQ(p.qa.SendCQ, wcs[k:])
		at = p.s.Now()
		return k > 0
	})
	require.Equal(t, 1, k)
	require.Equal(t, WCSuccess, wcs[0].Status)
	return at, p
}

// TestCCGrantSpacing: a QP at CCT index i has each grant after its first
// wait serialization + CCT[i] after the one before; without the delay the
// wire alone spaces its packets, one serialization apart. So a WRITE of
// N MTU packets completes (N − 1) × CCT[i] later than without CC, with
// everything else (the first packet's way, the last one's ACK) the same.
// Index 16 of the default table is one MTU SEND ONLY's wire time, S
// (cc.DefaultCCT): half the link. At index 0 (delay 0) nothing is gated
// and the completion time is exactly the CC-off one. (Measured: 1.4 ns
// short of (N − 1) × S = 20.775 µs; the grant-to-wire time of a packet
// is not quite constant: the first carries a RETH, PCIe completions
// align differently. The tolerance is 0.1 %.)
func TestCCGrantSpacing(t *testing.T) {
	const n = 64 * 4096 // 64 MTU packets
	base, _ := writeTime(t, n, -1)
	zero, _ := writeTime(t, n, 0)
	assert.Equal(t, base, zero, "delay 0 gates nothing")
	slow, p := writeTime(t, n, 16)
	lc := edrLink()
	mtu := ib.Packet{Opcode: ib.SendOnly, PayloadLen: lc.MTU}
	delay := lc.Timing(lc.LengthM).Serialization(mtu.WireBytes()) // CCT[16] = 16 × S / 16
	want := 63 * delay
	got := slow - base
	t.Logf("base %v, throttled %v: +%v, (N−1) × CCT[16] = %v", base, slow, got, want)
	assert.InEpsilon(t, float64(want), float64(got), 0.001)
	assert.Equal(t, 16, p.a.CCIndex(p.qa), "no BECN: the QP stays at CCTI_Min")
}
