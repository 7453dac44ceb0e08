package hca

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// modRun is one moderation scenario on an eventPair: B's receive CQ
// armed once, SENDs from A at the given times, the receive CQEs' visible
// times and the events' delivery times recorded.
type modRun struct {
	cqeAt, eventAt []ib.PS
	p              *eventPair
}

func runModerated(t *testing.T, cfg Config, count, periodUS int, sends []ib.PS, until ib.PS) modRun {
	t.Helper()
	p := newEventPair(t, cfg)
	cq := p.qb.RecvCQ
	for range sends {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}
	require.NoError(t, p.b.ModifyCQ(cq, count, periodUS))
	require.NoError(t, p.b.ReqNotifyCQ(cq, false))
	r := modRun{p: p}
	p.b.OnCQE = func(c *CQ, now ib.PS) {
		if c == cq {
			r.cqeAt = append(r.cqeAt, now)
		}
	}
	p.chB.OnEvent = func(_ *CQ, now ib.PS) { r.eventAt = append(r.eventAt, now) }
	for _, at := range sends {
		p.send(t, at, false)
	}
	p.run(t, until)
	require.Len(t, r.cqeAt, len(sends))
	return r
}

// pcieTimes returns the Gen3 x16 TLP times of an EQE (64 + 24 B: 5586 ps)
// and an MSI-X message (4 + 24 B: 1778 ps), as TestEventBehindCQEOnPCIe
// derives them.
func pcieTimes(cfg Config) (eqe, msix ib.PS) {
	pcie := NewPCIe(cfg.PCIe)
	return pcie.SerPS(EQEBytes + cfg.PCIe.TLPOverheadBytes), pcie.SerPS(MSIXBytes + cfg.PCIe.TLPOverheadBytes)
}

// TestCQModerationCount: cq_count 4, period off, six SENDs 3 µs apart
// (each alone on an idle link and PCIe). The first three CQEs are held;
// the fourth fires, as an unmoderated CQE does, so its EQE and MSI-X
// follow its CQE TLP back to back: the event comes at the fourth CQE's
// visible time + 5586 (EQE) + 1778 (MSI-X) ps + W (5 µs), to the
// picosecond. The arm is spent there: the fifth and sixth CQEs fire
// nothing. One EQE, one MSI-X.
func TestCQModerationCount(t *testing.T) {
	cfg := Defaults()
	cfg.Host.InterruptToWakeupNS = 5000
	var sends []ib.PS
	for i := 0; i < 6; i++ {
		sends = append(sends, 5*ib.Microsecond+ib.PS(i)*3*ib.Microsecond)
	}
	r := runModerated(t, cfg, 4, 0, sends, 60*ib.Microsecond)
	eqe, msix := pcieTimes(cfg)
	require.Equal(t, ib.PS(5586), eqe)
	require.Equal(t, ib.PS(1778), msix)
	require.Len(t, r.eventAt, 1)
	assert.Equal(t, r.cqeAt[3]+eqe+msix+5*ib.Microsecond, r.eventAt[0], "the 4th CQE fires")
	assert.Equal(t, int64(1), r.p.b.Counters.EQEs)
	assert.Equal(t, int64(1), r.p.b.Counters.Interrupts)
	assert.Equal(t, int64(6), r.p.b.Counters.CQEs)
}

// TestCQModerationPeriod: cq_count 4, cq_period 10 µs, two SENDs 3 µs
// apart: the count is never reached, so the timer fires, 10 µs after the
// first held CQE issued on PCIe. On the idle link that CQE (64 + 24 B,
// the EQE's 5586 ps) was visible at issue + 5586 + L (L the posted-write
// latency); at expiry the EQE passes the cqe stage (C = 10 cycles at
// 1000 MHz, 10 ns), then its TLP (5586) and the MSI-X TLP (1778) go, and
// the MSI-X lands L later; the thread wakes W after:
//
//	event = (cqe0 − 5586 − L) + 10 µs + C + 5586 + 1778 + L + W
//	      = cqe0 + 10 µs + C + 1778 + W.
//
// W is 0 and 2.5 µs. One event only.
func TestCQModerationPeriod(t *testing.T) {
	for _, w := range []float64{0, 2500} {
		cfg := Defaults()
		cfg.Host.InterruptToWakeupNS = w
		r := runModerated(t, cfg, 4, 10, []ib.PS{5 * ib.Microsecond, 8 * ib.Microsecond}, 60*ib.Microsecond)
		_, msix := pcieTimes(cfg)
		c := ib.PS(cfg.CQE.LatencyCycles) * ib.CyclePS(cfg.CoreClockMHz)
		require.Equal(t, ib.PS(10000), c)
		require.Len(t, r.eventAt, 1, "W %v", w)
		assert.Equal(t, r.cqeAt[0]+10*ib.Microsecond+c+msix+ib.FromNanoseconds(w), r.eventAt[0], "W %v ns", w)
		assert.Equal(t, int64(1), r.p.b.Counters.Interrupts)
	}
}

// TestCQModerationOffIsUnmoderated: 0/0 (and cq_count 1, whose every
// CQE is its count) fire at the first CQE exactly as a CQ never
// modified: its CQE visible + 5586 + 1778 ps + W.
func TestCQModerationOffIsUnmoderated(t *testing.T) {
	cfg := Defaults()
	eqe, msix := pcieTimes(cfg)
	w := ib.FromNanoseconds(cfg.Host.InterruptToWakeupNS)
	for _, m := range [][2]int{{0, 0}, {1, 0}, {1, 100}} {
		r := runModerated(t, cfg, m[0], m[1], []ib.PS{5 * ib.Microsecond, 8 * ib.Microsecond}, 40*ib.Microsecond)
		require.Len(t, r.eventAt, 1, "%v", m)
		assert.Equal(t, r.cqeAt[0]+eqe+msix+w, r.eventAt[0], "%v", m)
	}
}

// TestCQModerationAtArm: an arm reaching the HCA behind unpolled CQEs
// counts them as held. Three SENDs with the CQ not armed, then an arm
// (consumer index 0, three written):
//   - count 4: three held, no event until the fourth SEND's CQE fires it
//     (its visible time + 5586 + 1778 ps + W);
//   - count 3: three held reach the count, the arm fires at once;
//   - count 4, period 10 µs: the timer starts at the arm's arrival, the
//     store plus 308 ns of MMIO, so the event is that + 10 µs + the cqe
//     stage (10 ns) + the EQE's and MSI-X's TLPs + L (200 ns) + W.
func TestCQModerationAtArm(t *testing.T) {
	cfg := Defaults()
	eqe, msix := pcieTimes(cfg)
	w := ib.FromNanoseconds(cfg.Host.InterruptToWakeupNS)
	l := ib.FromNanoseconds(cfg.PCIe.WriteLatencyNS)
	c := ib.PS(cfg.CQE.LatencyCycles) * ib.CyclePS(cfg.CoreClockMHz)
	mmio := ib.FromNanoseconds(cfg.PCIe.MMIOLatencyNS)
	armAt := 20 * ib.Microsecond
	for _, tc := range []struct {
		name          string
		count, period int
		want          func(cqeAt []ib.PS) ib.PS
	}{
		{"count 4", 4, 0, func(cqeAt []ib.PS) ib.PS { return cqeAt[3] + eqe + msix + w }},
		{"count 3", 3, 0, func([]ib.PS) ib.PS { return armAt + mmio + c + eqe + msix + l + w }},
		{"period", 4, 10, func([]ib.PS) ib.PS { return armAt + mmio + 10*ib.Microsecond + c + eqe + msix + l + w }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newEventPair(t, cfg)
			cq := p.qb.RecvCQ
			for i := 0; i < 4; i++ {
				require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
			}
			require.NoError(t, p.b.ModifyCQ(cq, tc.count, tc.period))
			var cqeAt, eventAt []ib.PS
			p.b.OnCQE = func(c *CQ, now ib.PS) { cqeAt = append(cqeAt, now) }
			p.chB.OnEvent = func(_ *CQ, now ib.PS) { eventAt = append(eventAt, now) }
			for i := 0; i < 3; i++ {
				p.send(t, ib.PS(i+1)*3*ib.Microsecond, false)
			}
			p.at(armAt, func() { require.NoError(t, p.b.ReqNotifyCQ(cq, false)) })
			p.send(t, 45*ib.Microsecond, false)
			p.run(t, 70*ib.Microsecond)
			require.Len(t, cqeAt, 4)
			require.Len(t, eventAt, 1)
			assert.Equal(t, tc.want(cqeAt), eventAt[0])
		})
	}
}

// TestModifyCQRanges: cq_count is 16 bits and cq_period 12 bits in mlx5's
// CQ context; beyond either, or on a destroyed CQ, EINVAL.
func TestModifyCQRanges(t *testing.T) {
	cfg := Defaults()
	s := components.NewSim()
	a, _ := BackToBack(s, edrLink(), cfg, cfg)
	cq := a.CreateCQ(16)
	require.NoError(t, a.ModifyCQ(cq, 65535, 4095))
	count, period := cq.Moderation()
	assert.Equal(t, []int{65535, 4095}, []int{count, period})
	for _, bad := range [][2]int{{65536, 0}, {-1, 0}, {0, 4096}, {0, -1}} {
		assert.ErrorIs(t, a.ModifyCQ(cq, bad[0], bad[1]), syscall.EINVAL, "%v", bad)
	}
	count, period = cq.Moderation()
	assert.Equal(t, []int{65535, 4095}, []int{count, period}, "a refused modify changes nothing")
	require.NoError(t, a.DestroyCQ(cq))
	assert.ErrorIs(t, a.ModifyCQ(cq, 1, 1), syscall.EINVAL)
	assert.ErrorIs(t, a.ResizeCQ(cq, 32), syscall.EINVAL)
}

// resizePair is A sending to B, whose receive CQ is depth CQEs deep.
func resizePair(t *testing.T, depth int) *eventPair {
	cfg := Defaults()
	s := components.NewSim()
	a, b := BackToBack(s, edrLink(), cfg, cfg)
	p := &eventPair{s: s, a: a, b: b}
	pdA, pdB := a.AllocPD(), b.AllocPD()
	p.qa = a.CreateQP(pdA, a.CreateCQ(64), a.CreateCQ(64), 64, 64)
	p.qb = b.CreateQP(pdB, b.CreateCQ(64), b.CreateCQ(depth), 64, 64)
	require.NoError(t, ConnectRC(p.qa, p.qb, 4096, 1, 2))
	p.bufA, p.bufB = a.Malloc(4096), b.Malloc(4096)
	p.mrA, p.mrB = a.RegMR(pdA, p.bufA, 4096, AccessLocalWrite), b.RegMR(pdB, p.bufB, 4096, AccessLocalWrite)
	for i := 0; i < 32; i++ {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{ID: uint64(i), Addr: p.bufB, Length: 4096, LKey: p.mrB.LKey}))
	}
	return p
}

// sendN posts SENDs of lengths first, first+1, … at t, t + 2 µs, … so
// that each CQE names its SEND by its byte count.
func (p *eventPair) sendN(t *testing.T, at ib.PS, first, n int) {
	for i := 0; i < n; i++ {
		l := first + i
		p.at(at+ib.PS(i)*2*ib.Microsecond, func() {
			require.NoError(t, p.a.PostSend(p.qa, &SendWR{Opcode: WRSend, LocalAddr: p.bufA, Length: uint32(l), LKey: p.mrA.LKey}))
		})
	}
}

// poll polls cq at t and appends the byte counts it finds.
func (p *eventPair) pollLens(at ib.PS, cq *CQ, got *[]uint32) {
	p.at(at, func() {
		var wcs [16]WC
		n := p.b.PollCQ(cq, wcs[:])
		for _, wc := range wcs[:n] {
			*got = append(*got, wc.ByteLen)
		}
	})
}

// TestResizeCQCopiesUnpolledInOrder: B's receive CQ, 4 deep. Three SENDs,
// two polled (ci 2), three more: pi 6, the fourth and fifth CQEs wrapped
// into slots 0 and 1 of the old ring (lap 1, owner 1). Resize to 8: the
// four unpolled (indices 2 … 5) go to slots 2 … 5 of lap 0 (owner 0); a
// copy keeping the old ring's owner bit would hide indices 4 and 5. Four
// more SENDs fill the new ring (indices 6 … 9, the last two wrapping to
// slots 0 and 1, lap 1) with no overrun: eight polled in order. Then a
// shrink to 4 behind three unpolled (indices 10, 11, 12 → slots 2, 3, 0;
// laps 2, 2, 3 → owners 0, 0, 1), and a resize to 2 with three unpolled
// refused (EINVAL), as are 3 (not a power of two) and 2^23 (above
// MaxCQDepth).
func TestResizeCQCopiesUnpolledInOrder(t *testing.T) {
	p := resizePair(t, 4)
	cq := p.qb.RecvCQ
	var got []uint32
	p.sendN(t, 5*ib.Microsecond, 1, 3)
	p.at(15*ib.Microsecond, func() {
		var wcs [2]WC
		require.Equal(t, 2, p.b.PollCQ(cq, wcs[:]))
		got = append(got, wcs[0].ByteLen, wcs[1].ByteLen)
	})
	p.sendN(t, 20*ib.Microsecond, 4, 3)
	var errs []error
	p.at(30*ib.Microsecond, func() {
		errs = append(errs, p.b.ResizeCQ(cq, 2), p.b.ResizeCQ(cq, 8))
	})
	p.sendN(t, 35*ib.Microsecond, 7, 4)
	p.pollLens(50*ib.Microsecond, cq, &got)
	p.sendN(t, 55*ib.Microsecond, 11, 3)
	p.at(65*ib.Microsecond, func() {
		errs = append(errs, p.b.ResizeCQ(cq, 2), p.b.ResizeCQ(cq, 3), p.b.ResizeCQ(cq, 1<<23), p.b.ResizeCQ(cq, 4))
	})
	p.sendN(t, 70*ib.Microsecond, 14, 1)
	p.pollLens(80*ib.Microsecond, cq, &got)
	p.run(t, 90*ib.Microsecond)
	require.Len(t, errs, 6)
	assert.ErrorIs(t, errs[0], syscall.EINVAL, "2 < 4 unpolled")
	assert.NoError(t, errs[1])
	assert.ErrorIs(t, errs[2], syscall.EINVAL, "2 < 3 unpolled")
	assert.ErrorIs(t, errs[3], syscall.EINVAL, "not a power of two")
	assert.ErrorIs(t, errs[4], syscall.EINVAL, "above MaxCQDepth")
	assert.NoError(t, errs[5])
	assert.Equal(t, 4, cq.Depth)
	assert.False(t, cq.Overrun)
	assert.Equal(t, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, got)
}

// TestResizeCQInFlight: a CQE posted on PCIe before the resize and
// visible after it lands in the new ring, after the copied one (the
// model's rule: a CQE takes its ring address when it becomes visible;
// mlx5's RESIZE_CQ CQE, behind every CQE issued to the old ring, lets
// libmlx5 copy those too before ibv_resize_cq returns). A first run
// finds the second CQE's visible time v; the second, identical run
// resizes at v − 100 ns: after the CQE's issue (v − 5586 ps − 200 ns) and
// before it lands. Both CQEs poll from the new ring in order, and the old
// ring's slot 1 was never written.
func TestResizeCQInFlight(t *testing.T) {
	var v ib.PS
	for run := 0; run < 2; run++ {
		p := resizePair(t, 4)
		cq := p.qb.RecvCQ
		old := cq.buf
		var cqeAt []ib.PS
		p.b.OnCQE = func(c *CQ, now ib.PS) {
			if c == cq {
				cqeAt = append(cqeAt, now)
			}
		}
		p.sendN(t, 5*ib.Microsecond, 1, 2)
		var depthAtCQE int
		if run == 1 {
			p.at(v-100*ib.Nanosecond, func() {
				require.NoError(t, p.b.ResizeCQ(cq, 16))
				require.Len(t, cqeAt, 1, "the second CQE is still in flight")
			})
			p.b.OnCQE = func(c *CQ, now ib.PS) {
				cqeAt = append(cqeAt, now)
				depthAtCQE = c.Depth
			}
		}
		var got []uint32
		p.pollLens(20*ib.Microsecond, cq, &got)
		p.run(t, 30*ib.Microsecond)
		require.Len(t, cqeAt, 2)
		assert.Equal(t, []uint32{1, 2}, got)
		if run == 0 {
			v = cqeAt[1]
			continue
		}
		assert.Equal(t, v, cqeAt[1], "the resize does not move the CQE's time")
		assert.Equal(t, 16, depthAtCQE)
		assert.NotEqual(t, old, cq.buf)
		var b [CQEBytes]byte
		p.b.Mem.Read(old+1*CQEBytes, b[:])
		assert.Equal(t, uint8(CQEInvalid), DecodeCQE(b[:]).Opcode, "the in-flight CQE went to the new ring")
	}
}

// TestCQModerationRearm: count 2, period 10 µs. SENDs at 5 and 7 µs: the
// second CQE reaches the count and fires (its visible time + 5586 + 1778
// ps + W); the first CQE's timer, due about 15 µs, is now stale. The
// thread polls both and re-arms at 9 µs; a third SEND at 12 µs is held
// alone (a count carried over from the spent arm would fire it at once)
// and the stale timer does not fire it either: its own timer does, 10 µs
// after its issue (TestCQModerationPeriod's derivation: its visible time +
// 10 µs + the cqe stage's 10 ns + 1778 ps + W).
func TestCQModerationRearm(t *testing.T) {
	cfg := Defaults()
	p := newEventPair(t, cfg)
	cq := p.qb.RecvCQ
	for i := 0; i < 3; i++ {
		require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
	}
	require.NoError(t, p.b.ModifyCQ(cq, 2, 10))
	require.NoError(t, p.b.ReqNotifyCQ(cq, false))
	var cqeAt, eventAt []ib.PS
	p.b.OnCQE = func(_ *CQ, now ib.PS) { cqeAt = append(cqeAt, now) }
	p.chB.OnEvent = func(_ *CQ, now ib.PS) { eventAt = append(eventAt, now) }
	p.send(t, 5*ib.Microsecond, false)
	p.send(t, 7*ib.Microsecond, false)
	p.at(9*ib.Microsecond, func() {
		var wcs [4]WC
		require.Equal(t, 2, p.b.PollCQ(cq, wcs[:]))
		require.NoError(t, p.b.ReqNotifyCQ(cq, false))
	})
	p.send(t, 12*ib.Microsecond, false)
	p.run(t, 60*ib.Microsecond)
	eqe, msix := pcieTimes(cfg)
	w := ib.FromNanoseconds(cfg.Host.InterruptToWakeupNS)
	c := ib.PS(cfg.CQE.LatencyCycles) * ib.CyclePS(cfg.CoreClockMHz)
	require.Len(t, cqeAt, 3)
	require.Less(t, cqeAt[2], cqeAt[0]+10*ib.Microsecond, "the third CQE comes before the first's timer would expire")
	assert.Equal(t, []ib.PS{cqeAt[1] + eqe + msix + w, cqeAt[2] + 10*ib.Microsecond + c + msix + w}, eventAt)
}

// TestModifyCQWhileHolding: ModifyCQ on an armed CQ that holds a CQE
// takes effect from the next CQE, and a timer already running keeps its
// expiry (ModifyCQ's rule). Two SENDs at 5 and 8 µs, the CQ armed; at
// 7 µs, after the first CQE (held), ModifyCQ:
//   - count 4, period 10 µs → count 4, period 50 µs: the running timer
//     still expires 10 µs after the first CQE was issued, so the event
//     comes as in TestCQModerationPeriod: the first CQE's visible time +
//     10 µs + the CQE stage (10 ns) + the MSI-X (1778 ps) + W;
//   - count 4, no period → count 2: the second CQE is the second held, so
//     it fires as an unmoderated CQE: its visible time + EQE (5586 ps) +
//     MSI-X + W.
func TestModifyCQWhileHolding(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		count, period, to, toPer int
	}{
		{"period lengthened", 4, 10, 4, 50},
		{"count lowered", 4, 0, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			p := newEventPair(t, cfg)
			cq := p.qb.RecvCQ
			for range 2 {
				require.NoError(t, p.b.PostRecv(p.qb, &RecvWR{Addr: p.bufB, Length: 64, LKey: p.mrB.LKey}))
			}
			require.NoError(t, p.b.ModifyCQ(cq, tc.count, tc.period))
			require.NoError(t, p.b.ReqNotifyCQ(cq, false))
			var cqeAt, eventAt []ib.PS
			p.b.OnCQE = func(c *CQ, now ib.PS) {
				if c == cq {
					cqeAt = append(cqeAt, now)
				}
			}
			p.chB.OnEvent = func(_ *CQ, now ib.PS) { eventAt = append(eventAt, now) }
			p.send(t, 5*ib.Microsecond, false)
			p.send(t, 8*ib.Microsecond, false)
			p.at(7*ib.Microsecond, func() {
				require.Equal(t, uint32(1), cq.notify.mod.held, "the first CQE is held by 7 µs (issued; visible later)")
				require.NoError(t, p.b.ModifyCQ(cq, tc.to, tc.toPer))
			})
			p.run(t, 80*ib.Microsecond)
			require.Len(t, cqeAt, 2)
			require.Len(t, eventAt, 1)
			eqe, msix := pcieTimes(cfg)
			w := ib.FromNanoseconds(cfg.Host.InterruptToWakeupNS)
			if tc.toPer > 0 {
				c := ib.PS(cfg.CQE.LatencyCycles) * ib.CyclePS(cfg.CoreClockMHz)
				assert.Equal(t, cqeAt[0]+10*ib.Microsecond+c+msix+w, eventAt[0])
			} else {
				assert.Equal(t, cqeAt[1]+eqe+msix+w, eventAt[0])
			}
		})
	}
}
