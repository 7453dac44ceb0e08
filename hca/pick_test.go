package hca

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/ib"
)

// Every pick made in this package's test binary — the hca tests, and the
// fabric runs of pick_fabric_test.go — is checked against the round-robin
// scan over every QP that pickQP replaced.
var picksChecked, picksMade atomic.Int64

func TestMain(m *testing.M) {
	pickCheck = checkPick
	os.Exit(m.Run())
}

// scanPick is the scheduler's pick as it was before mayWork: the first QP
// at or after the pointer rr, wrapping, that may send now.
func scanPick(d *Device, rr int, now ib.PS) *QP {
	n := len(d.qps)
	for k := 0; k < n; k++ {
		qp := d.qps[(rr+k)%n]
		work := qp.req != nil && qp.req.HasWork() && now >= qp.holdUntil
		if qp.UD {
			work = (qp.State == QPRTS || qp.State == QPErr) && len(qp.udPending) > 0
		}
		if work && d.tx.roomFor(qp.vl) {
			return qp
		}
	}
	return nil
}

// checkPick panics (failing the test binary, whichever test runs) when
// pickQP chose other than the scan would have, or when a QP that may send
// is missing from mayWork after the pick.
func checkPick(d *Device, rr int, now ib.PS, picked *QP) {
	want := scanPick(d, rr, now)
	if picked != want {
		panic(fmt.Sprintf("hca: %s at %d ps from pointer %d: pickQP chose %v, the scan %v", d.Name, now, rr, qpName(picked), qpName(want)))
	}
	for i, qp := range d.qps {
		if qp.sendable(now) && d.mayWork[i>>6]&(1<<(uint(i)&63)) == 0 {
			panic(fmt.Sprintf("hca: %s at %d ps: QP 0x%x may send but is not in mayWork", d.Name, now, qp.Num))
		}
	}
	picksChecked.Add(1)
	if picked != nil {
		picksMade.Add(1)
	}
}

func qpName(qp *QP) string {
	if qp == nil {
		return "none"
	}
	return fmt.Sprintf("QP 0x%x", qp.Num)
}

// pickRig is two HCAs back to back with nrc RC QP pairs and one UD QP each,
// driven by random work requests in both directions.
type pickRig struct {
	s        *components.Sim
	dev      [2]*Device
	rc       [2][]*QP
	ud       [2]*QP
	buf      [2]uint64
	mr       [2]MR
	expected [2]int // send WRs posted (all signaled: every one completes)
	got      [2]int // send completions polled
}

const pickRigBuf = 1 << 20

func newPickRig(t *testing.T, cfg Config, nrc int) *pickRig {
	lc := edrLink()
	lc.MTU = 1024
	s := components.NewSim()
	a, b := BackToBack(s, lc, cfg, cfg)
	r := &pickRig{s: s, dev: [2]*Device{a, b}}
	acc := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	var pd [2]uint32
	var scq, rcq [2]*CQ
	for i, d := range r.dev {
		pd[i] = d.AllocPD()
		scq[i], rcq[i] = d.CreateCQ(4096), d.CreateCQ(4096)
		r.buf[i] = d.Malloc(pickRigBuf)
		r.mr[i] = d.RegMR(pd[i], r.buf[i], pickRigBuf, acc)
	}
	for k := 0; k < nrc; k++ {
		qa := a.CreateQP(pd[0], scq[0], rcq[0], 64, 64)
		qb := b.CreateQP(pd[1], scq[1], rcq[1], 64, 64)
		require.NoError(t, ConnectRC(qa, qb, lc.MTU, uint32(k*1000), uint32(k*1000+500)))
		r.rc[0], r.rc[1] = append(r.rc[0], qa), append(r.rc[1], qb)
		if k == nrc/2 {
			// A UD QP in the middle of the RC ones.
			for i, d := range r.dev {
				r.ud[i] = d.CreateUDQP(pd[i], scq[i], rcq[i], 64, 1024, 0x5151)
				for _, st := range []QPAttr{{State: QPInit}, {State: QPRTR, MTU: lc.MTU}, {State: QPRTS, SQPSN: 3}} {
					require.NoError(t, d.ModifyQP(r.ud[i], st))
				}
			}
		}
	}
	return r
}

// post posts one random work request from side i on a random QP. A SEND's
// receive is posted on the other side now or, to draw RNR NAKs, a little
// later.
func (r *pickRig) post(t *testing.T, rng *rand.Rand, i int) {
	d, peer := r.dev[i], r.dev[1-i]
	j := 1 - i
	half := uint64(pickRigBuf / 2)
	n := uint32(rng.IntN(6 * 1024))
	w := SendWR{ID: uint64(r.expected[i]), Signaled: true, LKey: r.mr[i].LKey, RKey: r.mr[j].RKey, Length: n,
		LocalAddr: r.buf[i] + uint64(rng.IntN(int(half)-int(n))), RemoteAddr: r.buf[j] + uint64(rng.IntN(int(half)-int(n)))}
	k := rng.IntN(len(r.rc[i]) + 1)
	if k == len(r.rc[i]) {
		// UD: a SEND of at most one MTU (some longer, failing LOC_LEN_ERR).
		w.Length = uint32(rng.IntN(1100))
		w.Opcode, w.UD, w.DLID, w.RemoteQPN, w.RemoteQKey = WRSend, true, peer.LID, r.ud[j].Num, 0x5151
		require.NoError(t, peer.PostRecv(r.ud[j], &RecvWR{Addr: r.buf[j] + half, Length: 2048, LKey: r.mr[j].LKey}))
		if err := d.PostSend(r.ud[i], &w); err != nil {
			require.ErrorContains(t, err, "send queue full")
			return
		}
		r.expected[i]++
		return
	}
	qp := r.rc[i][k]
	switch op := rng.IntN(6); op {
	case 0, 1:
		w.Opcode = WRRDMAWrite
	case 2:
		w.Opcode = WRRDMARead
		w.LocalAddr += half
	case 3:
		w.Opcode = []WROpcode{WRFetchAdd, WRCompSwap}[rng.IntN(2)]
		w.LocalAddr = r.buf[i] + half + uint64(rng.IntN(1024))*8
		w.RemoteAddr = r.buf[j] + uint64(rng.IntN(1024))*8
	default:
		w.Opcode = WRSend
		recv := func() {
			require.NoError(t, peer.PostRecv(r.rc[j][k], &RecvWR{Addr: r.buf[j] + half, Length: 8 * 1024, LKey: r.mr[j].LKey}))
		}
		if rng.IntN(3) == 0 {
			r.s.Schedule(r.s.Now()+ib.PS(rng.IntN(20))*ib.Microsecond, &poster{fn: recv}, 1)
		} else {
			recv()
		}
	}
	if err := d.PostSend(qp, &w); err != nil {
		require.ErrorContains(t, err, "send queue full")
		return
	}
	r.expected[i]++
}

// TestPickMatchesScan drives many QPs per HCA (more than one 64-bit word
// of mayWork) with random READs, WRITEs, SENDs, atomics and UD SENDs in
// both directions, posted in bursts over time, with a short retry timer and
// dropped ACKs (timeouts, go-back-N), late receives (RNR NAKs, RNR waits),
// a READ/atomic window of 2, and some QPs moved to ERR mid-run. Every pick
// is checked against the scan (TestMain); the test checks that the run
// exercised what it means to.
func TestPickMatchesScan(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			cfg := Defaults()
			cfg.RetryTimeout = 1 // 8.192 µs
			cfg.MinRNRTimer = 1  // 10 µs
			cfg.MaxRdAtomic = 2
			r := newPickRig(t, cfg, 70)
			checked, made := picksChecked.Load(), picksMade.Load()
			// Bursts of posts every few µs for 100 µs, each burst from both
			// sides, with a dropped ACK now and then.
			var burst func()
			bursts := 0
			burst = func() {
				for range rng.IntN(40) {
					r.post(t, rng, rng.IntN(2))
				}
				if rng.IntN(4) == 0 {
					r.dev[rng.IntN(2)].DropAcks++
				}
				if seed%2 == 0 && bursts == 10 {
					// A QP pair goes to ERR with work in flight: its
					// outstanding and later WRs flush.
					require.NoError(t, r.dev[0].ModifyQP(r.rc[0][5], QPAttr{State: QPErr}))
					require.NoError(t, r.dev[1].ModifyQP(r.rc[1][5], QPAttr{State: QPErr}))
				}
				if bursts++; bursts < 25 {
					r.s.Schedule(r.s.Now()+ib.PS(1+rng.IntN(8))*ib.Microsecond, &poster{fn: burst}, 1)
				}
			}
			r.s.Schedule(ib.Microsecond, &poster{fn: burst}, 1)
			var wcs [256]WC
			poll := func() bool {
				for i, d := range r.dev {
					for n := d.PollCQ(d.cqs[0], wcs[:]); n > 0; n = d.PollCQ(d.cqs[0], wcs[:]) {
						r.got[i] += n
					}
					for d.PollCQ(d.cqs[1], wcs[:]) > 0 {
					}
				}
				return bursts == 25 && r.got == r.expected
			}
			for _, d := range r.dev {
				d.OnCQE = func(*CQ, ib.PS) {
					if poll() {
						r.s.Stop()
					}
				}
			}
			r.s.StopAt(20 * ib.Millisecond)
			require.NoError(t, r.s.Run())
			poll()
			assert.Equal(t, r.expected, r.got, "every send WR completed")
			var timeouts, rnr, picks int64
			for _, d := range r.dev {
				timeouts += d.Counters.Timeouts
				rnr += d.Counters.RNRNaks
				picks += d.Counters.ReqPackets
			}
			t.Logf("%d WRs, %d request packets, %d picks checked (%d found a QP), %d timeouts, %d RNR NAKs",
				r.expected[0]+r.expected[1], picks, picksChecked.Load()-checked, picksMade.Load()-made, timeouts, rnr)
			assert.Greater(t, picksMade.Load()-made, int64(1000), "picks checked")
			assert.Greater(t, timeouts, int64(0), "timeouts exercised")
			assert.Greater(t, rnr, int64(0), "RNR NAKs exercised")
		})
	}
}

// BenchmarkPickQP times one scheduler pick on an HCA with 1,022 RC QPs, as
// each HCA of a 512-rank all-to-all has, of which busy have a packet to
// send (spread evenly); "scan" is the loop over every QP it replaced.
func BenchmarkPickQP(b *testing.B) {
	defer func(f func(*Device, int, ib.PS, *QP)) { pickCheck = f }(pickCheck)
	pickCheck = nil
	const nqp = 1022
	for _, busy := range []int{1, 8, 64, nqp} {
		s := components.NewSim()
		lc := edrLink()
		cfg := Defaults()
		d, peer := BackToBack(s, lc, cfg, cfg)
		pd, ppd := d.AllocPD(), peer.AllocPD()
		cq, pcq := d.CreateCQ(2), peer.CreateCQ(2)
		for i := 0; i < nqp; i++ {
			qp := d.CreateQP(pd, cq, cq, 1, 1)
			if err := ConnectRC(qp, peer.CreateQP(ppd, pcq, pcq, 1, 1), lc.MTU, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
		clear(d.mayWork) // as after the first picks found them idle
		for k := 0; k < busy; k++ {
			qp := d.qps[k*nqp/busy]
			qp.req.Enqueue(SendWQE{Opcode: WRRDMAWrite, Length: 1 << 20}, 0)
			d.markWork(qp)
		}
		b.Run(fmt.Sprintf("busy=%d/set", busy), func(b *testing.B) {
			for b.Loop() {
				if d.pickQP(0) == nil {
					b.Fatal("no pick")
				}
			}
		})
		b.Run(fmt.Sprintf("busy=%d/scan", busy), func(b *testing.B) {
			for b.Loop() {
				qp := scanPick(d, d.rr, 0)
				if qp == nil {
					b.Fatal("no pick")
				}
				d.rr = (int(qp.Num-qpBase) + 1) % nqp
			}
		})
	}
}
