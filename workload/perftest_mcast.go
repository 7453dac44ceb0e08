package workload

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// McastPerftest is perftest's send_bw or send_lat with --mcg (-g) on UD:
// one client, the sender, posts its SENDs to a multicast group (its MLID,
// QP 0xFFFFFF, a GRH on every packet) whose members, the servers, each
// have one UD QP attached (perftest -g attaches one), and the switches'
// MFTs replicate every packet to them.
//
// send_bw: the sender keeps tx_depth SENDs outstanding, signalling one in
// min(100, tx_depth), and reports size × iterations over first post → last
// completion, as perftest's client does (a UD send completes when its
// packet leaves the HCA); each receiver pre-posts perftest's 512 receives
// (DEF_RX_SEND), re-posts one per completion it polls, and reports the
// messages it received, those its HCA dropped (no receive WQE posted) and
// its own rate, received bytes over the sender's first post → its last
// receive completion polled.
//
// send_lat: the sender's ping goes to the group; receiver 0 (perftest's
// server, the one the client exchanged its details with) answers each one
// to a second group, the sender's (perftest gives the client the MGID
// with its last byte one higher, multicast_resources.c
// set_multicast_gid), and the sender reports half the time between
// successive posts, as ib_send_lat does. The other receivers only receive
// and re-post: a second perftest server answering too is not modelled
// (perftest's client, one-to-one over its TCP exchange, would not expect
// it).
type McastPerftest struct {
	run      PerftestRun
	s        *components.Sim
	mlid     uint16 // the receivers' group
	pongMLID uint16 // send_lat: the sender's group (receiver 0 answers to it)

	// Per device: 0 the sender, k ≥ 1 receiver k−1.
	devs      []*hca.Device
	qp        []*hca.QP
	buf       []uint64 // the send buffer (the sender's; receiver 0's pongs)
	rbuf      []uint64 // the receive buffer: the GRH area, then the payload
	mr        []hca.MR
	thread    []*hca.Thread
	recvDepth []int // receives each device pre-posts and keeps posted
	pending   []bool

	bufLen int
	inline bool
	isLat  bool
	pollPS ib.PS

	// The sender.
	posted, completed, unsig int
	stamps                   []ib.PS
	pongs                    int // send_lat: pongs receiver 0 sent
	// Per device: receive completions polled, and when the last was.
	got      []int
	lastRecv []ib.PS
	// quiet counts the checks after the sender ended that saw no receiver
	// progress; stale ends the wait for copies that will not come.
	quiet       int
	progress    int64
	senderEnd   ib.PS
	start, end  ib.PS
	senderDone  bool
	done        bool
	linkBusyAt0 ib.PS
	errs        []string
	payload     []byte // the bytes the sender's buffer held
	scratch     []byte
	recvBytes   []byte
	result      map[string]any
	// OnEnd, if set, is called when the test ends instead of stopping the
	// simulation (as Perftest.OnEnd).
	OnEnd func()
}

// Event kinds of a multicast perftest (its application threads: evApp0 +
// device index; the start and the end check).
const (
	evMcastStart uint8 = iota + 1
	evMcastCheck
	evMcastApp
)

// mcastStaleChecks × mcastCheckPS is how long the run waits, once the
// sender is done, for copies that stop coming (lost on a lossy link):
// 20 µs with no receiver progress.
const (
	mcastCheckPS     = ib.Microsecond
	mcastStaleChecks = 20
)

// BuildMcastPerftestOn builds the multicast test on HCAs attached to a
// fabric whose switches replicate mlid to every receiver (and, for
// send_lat, pongMLID to the sender): run.Connection must be UD, run.Test
// send_bw or send_lat, run.QPs 1.
func BuildMcastPerftestOn(s *components.Sim, sender *hca.Device, receivers []*hca.Device, mlid, pongMLID uint16, run PerftestRun) (*McastPerftest, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if err := CheckMcastRun(run.Test, run.Connection, run.QPs, "workload"); err != nil {
		return nil, err
	}
	if len(receivers) < 1 {
		return nil, fmt.Errorf("workload.mcg_receivers: a multicast test needs a receiver")
	}
	if !ib.IsMulticastLID(mlid) || strings.HasSuffix(run.Test, "_lat") && !ib.IsMulticastLID(pongMLID) {
		return nil, fmt.Errorf("workload: multicast LIDs 0x%x, 0x%x: not multicast LIDs", mlid, pongMLID)
	}
	t := &McastPerftest{run: run, s: s, mlid: mlid, pongMLID: pongMLID}
	t.isLat = strings.HasSuffix(run.Test, "_lat")
	t.inline = run.Size <= perftestInlineLimit(run)
	t.pollPS = ib.FromNanoseconds(run.HCA.Host.PollNS)
	t.bufLen = max(run.Size, 8)
	t.devs = append([]*hca.Device{sender}, receivers...)
	n := len(t.devs)
	t.qp, t.buf, t.rbuf = make([]*hca.QP, n), make([]uint64, n), make([]uint64, n)
	t.mr, t.thread, t.recvDepth = make([]hca.MR, n), make([]*hca.Thread, n), make([]int, n)
	t.pending, t.got, t.lastRecv = make([]bool, n), make([]int, n), make([]ib.PS, n)
	rng := rand.New(rand.NewPCG(run.Seed, 0x9e7f))
	wr := hca.SendWR{Opcode: hca.WRSend, Inline: t.inline, Length: uint32(run.Size), UD: true}
	sqBBs := 1
	for sqBBs < max(4, hca.WQEBBs(&wr))*max(run.TxDepth, perftestCQMod) {
		sqBBs *= 2
	}
	for k, d := range t.devs {
		pd := d.AllocPD()
		qp := d.CreateUDQP(pd, d.CreateCQ(run.HCA.CQDepth), d.CreateCQ(run.HCA.CQDepth), sqBBs, perftestRxDepth, perftestQKey)
		area := 2*t.bufLen + hca.UDGRHBytes
		buf := d.Malloc(area)
		data := make([]byte, area)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		d.Mem.Write(buf, data)
		t.thread[k] = d.NewThread()
		qp.SetThread(t.thread[k])
		t.qp[k], t.buf[k], t.rbuf[k] = qp, buf, buf+uint64(t.bufLen)
		t.mr[k] = d.RegMR(pd, buf, area, hca.AccessLocalWrite)
		psn := rng.Uint32() & 0xFFFFFF
		for _, attr := range []hca.QPAttr{{State: hca.QPInit}, {State: hca.QPRTR, MTU: run.Link.MTU, SL: uint8(run.SL)}, {State: hca.QPRTS, SQPSN: psn}} {
			if err := d.ModifyQP(qp, attr); err != nil {
				return nil, fmt.Errorf("workload: multicast perftest: %v", err)
			}
		}
		switch {
		case k > 0:
			if err := d.AttachMcast(qp, mlid); err != nil {
				return nil, err
			}
			t.recvDepth[k] = perftestRxDepth
		case t.isLat:
			if err := d.AttachMcast(qp, pongMLID); err != nil {
				return nil, err
			}
			t.recvDepth[k] = perftestRxDepth
		}
		k := k
		d.OnCQE = func(_ *hca.CQ, now ib.PS) { t.wakeApp(k, now) }
	}
	t.payload = make([]byte, run.Size)
	sender.Mem.Read(t.buf[0], t.payload)
	return t, nil
}

// CheckMcastRun checks the knobs a multicast perftest (workload.mcg) needs:
// UD, a SEND test, one QP. prefix is the key path ("workload").
func CheckMcastRun(test, connection string, qps int, prefix string) error {
	if test != "send_bw" && test != "send_lat" {
		return fmt.Errorf("%s.mcg: true runs send_bw and send_lat (perftest: multicast only on the SEND verb), not %s", prefix, test)
	}
	if connection != "UD" {
		return fmt.Errorf("%s.mcg: true needs %s.connection UD (multicast is unreliable datagram), not %s", prefix, prefix, connection)
	}
	if qps != 1 {
		return fmt.Errorf("%s.qps: %d, but a multicast test sends on one QP (perftest -g attaches 1 QP to the group)", prefix, qps)
	}
	return nil
}

// SetRecvDepth makes receiver k (0-based) pre-post and keep posted n
// receives instead of perftest's 512; 0 posts none, so its HCA drops every
// copy. Call it before Run.
func (t *McastPerftest) SetRecvDepth(k, n int) { t.recvDepth[k+1] = n }

// Sim returns the simulation.
func (t *McastPerftest) Sim() *components.Sim { return t.s }

// Devices returns the sender's HCA and the receivers'.
func (t *McastPerftest) Devices() []*hca.Device { return t.devs }

// Run runs the test to its end and returns the metrics.
func (t *McastPerftest) Run() (map[string]any, error) {
	for k := range t.devs {
		for range t.recvDepth[k] {
			t.postRecv(k)
		}
	}
	var startAt ib.PS
	for _, th := range t.thread {
		startAt = max(startAt, th.FreeAt(t.s.Now()))
	}
	if startAt > 0 {
		startAt += setupSettle
	}
	t.s.Schedule(startAt, t, evMcastStart)
	maxT := t.run.MaxTimeNs
	if maxT <= 0 {
		maxT = 1e9
	}
	limit := t.s.Now() + ib.FromNanoseconds(maxT)
	t.s.StopAt(limit)
	if err := t.s.Run(); err != nil {
		return nil, err
	}
	if !t.done && t.s.Now() < limit {
		// Stopped from outside before the end (a checker's violation,
		// which is the run's verdict): the metrics as they stand.
		t.done, t.end = true, t.s.Now()
		if !t.senderDone {
			t.senderEnd = t.end
		}
		return t.metrics(), nil
	}
	if !t.done {
		return nil, &TimeLimitError{Msg: fmt.Sprintf("perftest %s (multicast): did not finish within %.0f ns of simulated time (%d of %d messages completed at the sender)",
			t.run.Test, maxT, t.completed, t.run.Iterations)}
	}
	return t.result, nil
}

func (t *McastPerftest) postRecv(k int) {
	d := t.devs[k]
	if err := d.PostRecv(t.qp[k], &hca.RecvWR{ID: uint64(k), Addr: t.rbuf[k], Length: uint32(t.bufLen + hca.UDGRHBytes), LKey: t.mr[k].LKey}); err != nil {
		panic(fmt.Sprintf("perftest: post_recv: %v", err))
	}
}

// send posts a SEND from device k (the sender, or receiver 0's pong) to
// dlid, the group's MLID.
func (t *McastPerftest) send(k int, dlid uint16, signaled bool, id uint64) {
	w := hca.SendWR{ID: id, Opcode: hca.WRSend, Signaled: signaled, Inline: t.inline,
		LocalAddr: t.buf[k], Length: uint32(t.run.Size), LKey: t.mr[k].LKey,
		UD: true, DLID: dlid, RemoteQPN: ib.MulticastQPN, RemoteQKey: perftestQKey}
	if err := t.devs[k].PostSend(t.qp[k], &w); err != nil {
		panic(fmt.Sprintf("perftest: post_send: %v", err))
	}
}

func (t *McastPerftest) wakeApp(k int, now ib.PS) {
	if t.pending[k] || t.done {
		return
	}
	t.pending[k] = true
	ev := t.s.Schedule(t.thread[k].FreeAt(now)+t.pollPS, t, evMcastApp)
	ev.Arg = int64(k)
}

// HandleEvent implements components.EventHandler.
func (t *McastPerftest) HandleEvent(ev *components.Event) {
	if t.done {
		return
	}
	switch ev.Kind {
	case evMcastStart:
		t.start = t.s.Now()
		for _, d := range t.devs {
			d.ResetStats()
		}
		t.linkBusyAt0 = t.devs[0].Port.BusyThrough()
		if t.isLat {
			t.ping()
		} else {
			t.fill()
		}
	case evMcastCheck:
		t.check(true)
	case evMcastApp:
		k := int(ev.Arg)
		t.pending[k] = false
		t.poll(k)
	}
}

// fill posts the sender's SENDs up to the tx depth (send_bw).
func (t *McastPerftest) fill() {
	iters := t.run.Iterations
	cqMod := min(perftestCQMod, t.run.TxDepth)
	for t.posted < iters && t.posted-t.completed < t.run.TxDepth {
		t.unsig++
		signaled := t.unsig == cqMod || t.posted == iters-1
		if signaled {
			t.unsig = 0
		}
		t.send(0, t.mlid, signaled, uint64(t.posted))
		t.posted++
	}
}

// ping posts the sender's next ping (send_lat).
func (t *McastPerftest) ping() {
	t.stamps = append(t.stamps, t.s.Now())
	t.send(0, t.mlid, (t.posted+1)%perftestCQMod == 0, uint64(t.posted))
	t.posted++
}

// poll is one turn of device k's application poll loop.
func (t *McastPerftest) poll(k int) {
	d := t.devs[k]
	var wcs [64]hca.WC
	if k == 0 && !t.isLat {
		for {
			n := d.PollCQ(t.qp[0].SendCQ, wcs[:])
			if n == 0 {
				break
			}
			for _, wc := range wcs[:n] {
				t.checkWC(0, wc)
				// A signaled completion covers the unsignaled SENDs before it.
				t.completed = int(wc.WRID) + 1
			}
		}
		t.fill()
		if t.completed == t.run.Iterations {
			t.senderFinished()
		}
		return
	}
	for d.PollCQ(t.qp[k].SendCQ, wcs[:]) > 0 {
	}
	for {
		n := d.PollCQ(t.qp[k].RecvCQ, wcs[:])
		if n == 0 {
			break
		}
		for _, wc := range wcs[:n] {
			t.checkWC(k, wc)
			t.got[k]++
			t.lastRecv[k] = t.s.Now()
			t.checkArrived(k)
			t.postRecv(k)
			switch {
			case k == 0: // send_lat: the pong of the last ping
				t.completed++
				if t.completed == t.run.Iterations {
					t.stamps = append(t.stamps, t.s.Now())
					t.senderFinished()
					return
				}
				t.ping()
			case k == 1 && t.isLat:
				t.pongs++
				t.send(1, t.pongMLID, t.pongs%perftestCQMod == 0, uint64(t.pongs))
			}
		}
	}
	if t.senderDone {
		t.check(false)
	}
}

// checkArrived compares device k's receive buffer with what was sent: the
// sender's buffer, or for the sender (send_lat) receiver 0's.
func (t *McastPerftest) checkArrived(k int) {
	want := t.payload
	if k == 0 {
		t.scratch = t.snap(t.scratch, 1, t.buf[1])
		want = t.scratch
	}
	t.recvBytes = t.snap(t.recvBytes, k, t.rbuf[k]+hca.UDGRHBytes)
	if !bytes.Equal(t.recvBytes, want) {
		t.errs = append(t.errs, fmt.Sprintf("host %d: received bytes differ from the sent ones", k))
	}
}

func (t *McastPerftest) snap(dst []byte, k int, addr uint64) []byte {
	return readMessage(dst, t.devs[k], addr, t.run.Size)
}

func (t *McastPerftest) checkWC(k int, wc hca.WC) {
	if wc.Status != hca.WCSuccess {
		t.errs = append(t.errs, fmt.Sprintf("host %d: completion wr %d: %v", k, wc.WRID, wc.Status))
	}
}

// senderFinished: the sender has its last completion (send_bw) or pong
// (send_lat); the run ends once every receiver has had, or dropped, every
// copy, or when copies stop coming (check).
func (t *McastPerftest) senderFinished() {
	t.senderDone = true
	t.senderEnd = t.s.Now()
	t.check(true)
}

// check ends the run when every receiver accounts for every message
// (received or dropped at its HCA), or after mcastStaleChecks timed checks
// in a row without progress (copies that will not come); a timed check
// (one chain of them, from the sender's end) else looks again in
// mcastCheckPS, a receiver's poll only ends the run when it is complete.
func (t *McastPerftest) check(timed bool) {
	if t.done {
		return
	}
	all := true
	var progress int64
	for k := 1; k < len(t.devs); k++ {
		n := int64(t.got[k]) + t.devs[k].Counters.UDDrops
		progress += n
		all = all && n >= int64(t.run.Iterations)
	}
	if !all && !timed {
		return
	}
	if progress != t.progress {
		t.progress, t.quiet = progress, 0
	}
	if !all && t.quiet < mcastStaleChecks {
		t.quiet++
		t.s.Schedule(t.s.Now()+mcastCheckPS, t, evMcastCheck)
		return
	}
	t.done = true
	t.end = t.s.Now()
	t.verify()
	t.result = t.metrics()
	if t.OnEnd != nil {
		t.OnEnd()
		return
	}
	t.s.Stop()
}

// verify checks every receiver that received a message holds the sender's
// bytes (every message carried the same buffer).
func (t *McastPerftest) verify() {
	for k := 1; k < len(t.devs); k++ {
		if t.got[k] > 0 && !bytes.Equal(t.snap(nil, k, t.rbuf[k]+hca.UDGRHBytes), t.payload) {
			t.errs = append(t.errs, fmt.Sprintf("receiver %d: destination differs from source", k-1))
		}
	}
}

// metrics returns the run's metrics (docs/metrics.md, "Multicast
// perftest"): the sender's as perftest's client reports them, and per
// receiver.
func (t *McastPerftest) metrics() map[string]any {
	run := t.run
	span := t.senderEnd - t.start
	msgs := run.Iterations
	m := map[string]any{
		"test":           run.Test,
		"size_bytes":     run.Size,
		"iterations":     run.Iterations,
		"qps":            1,
		"inline":         t.inline,
		"mcg":            true,
		"mcg_receivers":  len(t.devs) - 1,
		"sim_time_ns":    float64(t.end-t.start) / 1000,
		"events":         t.s.Events(),
		"data_verified":  len(t.errs) == 0,
		"mcast_mlid":     int(t.mlid),
		"sender_packets": t.devs[0].Counters.ReqPackets,
	}
	if len(t.errs) > 0 {
		m["data_errors"] = t.errs
	}
	if span > 0 {
		m["bw_gbps"] = float64(run.Size) * float64(msgs) * 8 / float64(span) * 1000
		m["msg_rate_mpps"] = float64(msgs) / float64(span) * 1e6
	}
	if t.isLat {
		v := make([]int64, 0, len(t.stamps))
		for i := 1; i < len(t.stamps); i++ {
			v = append(v, int64(t.stamps[i]-t.stamps[i-1]))
		}
		l := Latencies{v: v}
		m["lat_us"] = latSummaryUs(&l, 2)
	}
	busy := t.devs[0].Port.BusyThrough() - t.linkBusyAt0
	m["link_utilization"] = float64(busy) / math.Max(1, float64(span))
	var recv []any
	minMsgs, drops, lost := run.Iterations, int64(0), int64(0)
	minBW := math.Inf(1)
	for k := 1; k < len(t.devs); k++ {
		c := t.devs[k].Counters
		r := map[string]any{
			"messages":    t.got[k],
			"drops":       c.UDDrops,
			"lost":        int64(run.Iterations) - int64(t.got[k]) - c.UDDrops,
			"mcast_drops": c.McastDrops,
		}
		if d := t.lastRecv[k] - t.start; t.got[k] > 0 && d > 0 {
			r["bw_gbps"] = float64(run.Size) * float64(t.got[k]) * 8 / float64(d) * 1000
			minBW = min(minBW, r["bw_gbps"].(float64))
		} else {
			minBW = 0
		}
		recv = append(recv, r)
		minMsgs = min(minMsgs, t.got[k])
		drops += c.UDDrops
		lost += r["lost"].(int64)
	}
	m["receivers"] = recv
	m["receiver_messages_min"] = minMsgs
	m["receiver_drops"] = drops
	m["receiver_lost"] = lost
	if !t.isLat {
		m["receiver_bw_gbps_min"] = minBW
	}
	return m
}
