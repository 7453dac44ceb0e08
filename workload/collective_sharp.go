package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// AlgSharp is the in-network all-reduce: the switches' SHARP aggregation
// nodes reduce the ranks' fragments on their way up a tree and multicast
// the result down (docs/fabric.md, "In-network all-reduce (SHARP)").
const AlgSharp = "sharp"

// SharpAggQPN is the QP number a rank's fragments are addressed to at its
// aggregation node (the AN's QP behind the switch's port 0; any number
// serves the model, this one names itself).
const SharpAggQPN = 0x5A4A9

// SharpQKey is the Q_Key of the ranks' SHARP UD QPs and of the result
// group.
const SharpQKey = 0x5A4A9

// SharpRun is what the in-network all-reduce needs beyond CollectiveRun:
// where each rank sends, what comes back, and the window.
type SharpRun struct {
	// LeafLID[r] is the LID of the aggregation node rank r's fragments go
	// to (its switch's).
	LeafLID []uint16
	// ResultMLID is the group the root AN sends each reduced fragment
	// down on; every rank's QP is attached to it.
	ResultMLID uint16
	// OSTs is the window: a rank sends fragment f only once it has the
	// result of fragment f − OSTs (SHARP's outstanding transactions), so
	// no AN ever holds more than OSTs fragments of the tree.
	OSTs int
	// FragmentBytes is a fragment's payload (≤ the path MTU).
	FragmentBytes int
}

// sharpRank is one rank's SHARP progress.
type sharpRank struct {
	qp       *hca.QP
	land     uint64 // landing slots: fragment f's datagram at land + f·(GRH + F)
	sent     int    // fragments posted
	sentDone int    // send completions polled
	results  int    // results polled (in fragment order)
}

// sharpState is the collective driver's SHARP part (collective.sharp).
type sharpState struct {
	run   SharpRun
	frags int
	ranks []sharpRank
	buf   []byte // one fragment, reused to copy a result into the data
}

// SharpFragments returns how many fragments an all-reduce of bytes per
// rank takes in frag-byte fragments.
func SharpFragments(bytes int64, frag int) int { return int((bytes + int64(frag) - 1) / int64(frag)) }

// BuildSharpAllReduceOn sets the in-network all-reduce up on devs (rank i
// on devs[i]): per rank a protection domain, a send and a receive CQ, one
// UD QP attached to the result group, the data buffer filled as the other
// all-reduces fill it, a landing area of one UD receive per fragment
// (its 40-byte GRH area and the fragment), every receive pre-posted.
func BuildSharpAllReduceOn(s *components.Sim, devs []*hca.Device, run CollectiveRun, sr SharpRun) (*Collective, error) {
	if err := run.Validate(); err != nil {
		return nil, err
	}
	if run.Op != CollAllReduce || run.Algorithm != AlgSharp {
		return nil, fmt.Errorf("workload.algorithm: sharp runs an all-reduce only")
	}
	n := len(devs)
	if len(sr.LeafLID) != n || sr.OSTs < 1 || sr.FragmentBytes < 1 || sr.FragmentBytes > run.MTU {
		panic(fmt.Sprintf("workload: sharp: %d leaf LIDs for %d ranks, %d OSTs, %d-byte fragments (MTU %d)", len(sr.LeafLID), n, sr.OSTs, sr.FragmentBytes, run.MTU))
	}
	frags := SharpFragments(run.Bytes, sr.FragmentBytes)
	sched := Schedule{Op: CollAllReduce, Ranks: n, Bytes: run.Bytes, Algorithm: AlgSharp,
		Landing: int64(frags) * int64(hca.UDGRHBytes+sr.FragmentBytes)}
	if err := checkHostBytes(sched); err != nil {
		return nil, err
	}
	c := &collective{run: run, sched: sched, slice: int64(sr.FragmentBytes), s: s}
	st := &sharpState{run: sr, frags: frags, ranks: make([]sharpRank, n), buf: make([]byte, sr.FragmentBytes)}
	c.sharp = st
	rng := rand.New(rand.NewPCG(run.Seed, 0x95e9))
	size := int(run.Bytes)
	wr := hca.SendWR{Opcode: hca.WRSendImm, Length: uint32(sr.FragmentBytes), UD: true, GRH: true}
	sqBBs := pow2(sr.OSTs * hca.WQEBBs(&wr))
	for r, d := range devs {
		rk := &collRank{index: r, dev: d}
		pd := d.AllocPD()
		rk.sendCQ = d.CreateCQ(pow2(max(d.Cfg.CQDepth, sr.OSTs)))
		rk.recvCQ = d.CreateCQ(pow2(max(d.Cfg.CQDepth, frags)))
		base := d.Malloc(size + int(sched.Landing))
		rk.src, rk.dst = base, base+uint64(size)
		rk.mr = d.RegMR(pd, base, size+int(sched.Landing), hca.AccessLocalWrite)
		qp := d.CreateUDQP(pd, rk.sendCQ, rk.recvCQ, sqBBs, pow2(frags), SharpQKey)
		for _, attr := range []hca.QPAttr{{State: hca.QPInit}, {State: hca.QPRTR, MTU: run.MTU, SL: uint8(run.SL)},
			{State: hca.QPRTS, SQPSN: rng.Uint32() & 0xFFFFFF}} {
			if err := d.ModifyQP(qp, attr); err != nil {
				panic(fmt.Sprintf("workload: sharp: rank %d: modify qp: %v", r, err))
			}
		}
		if err := d.AttachMcast(qp, sr.ResultMLID); err != nil {
			panic(fmt.Sprintf("workload: sharp: rank %d: %v", r, err))
		}
		st.ranks[r] = sharpRank{qp: qp, land: rk.dst}
		slot := uint64(hca.UDGRHBytes + sr.FragmentBytes)
		for f := 0; f < frags; f++ {
			if err := d.PostRecv(qp, &hca.RecvWR{ID: uint64(f), Addr: rk.dst + uint64(f)*slot, Length: uint32(slot), LKey: rk.mr.LKey}); err != nil {
				panic(fmt.Sprintf("workload: sharp: rank %d: post_recv: %v", r, err))
			}
		}
		c.ranks = append(c.ranks, rk)
	}
	c.fill(true)
	for r, rk := range c.ranks {
		r := r
		rk.dev.OnCQE = func(_ *hca.CQ, now ib.PS) { c.wake(r, now) }
	}
	return &Collective{c: c}, nil
}

// sharpTurn is one pass of rank r's poll loop: drain the send CQ, take
// every result (copying it from its landing slot into the data: the UD
// receive puts a GRH area before each fragment, so results cannot land
// in place), post every fragment the window allows, and notice the end.
func (c *collective) sharpTurn(r int) {
	rk := c.ranks[r]
	if rk.done {
		return
	}
	st := c.sharp
	sr := &st.ranks[r]
	d := rk.dev
	F := st.run.FragmentBytes
	c.drain(r, rk.sendCQ, func(hca.WC) { sr.sentDone++ })
	c.drain(r, rk.recvCQ, func(wc hca.WC) {
		f := sr.results
		if !wc.HasImm || int(wc.Imm) != f {
			c.errs = append(c.errs, fmt.Sprintf("rank %d: result completion %d carries fragment %d (immediate %v), want %d", r, wc.WRID, wc.Imm, wc.HasImm, f))
		}
		n := c.sharpLen(f)
		b := st.buf[:n]
		d.Mem.Read(sr.land+uint64(f)*uint64(hca.UDGRHBytes+F)+hca.UDGRHBytes, b)
		d.Mem.Write(rk.src+uint64(f*F), b)
		sr.results++
	})
	for sr.sent < st.frags && sr.sent < sr.results+st.run.OSTs {
		f := sr.sent
		w := hca.SendWR{ID: uint64(f), Opcode: hca.WRSendImm, Signaled: true, UD: true, GRH: true,
			LocalAddr: rk.src + uint64(f*F), Length: uint32(c.sharpLen(f)), LKey: rk.mr.LKey,
			DLID: st.run.LeafLID[r], RemoteQPN: SharpAggQPN, RemoteQKey: SharpQKey, Imm: uint32(f)}
		if err := d.PostSend(sr.qp, &w); err != nil {
			panic(fmt.Sprintf("workload: sharp rank %d: post_send: %v", r, err))
		}
		sr.sent++
	}
	if sr.sent == st.frags && sr.sentDone == st.frags && sr.results == st.frags {
		c.rankDone(r)
	}
}

// sharpLen is fragment f's payload: FragmentBytes, the last one what is
// left of S.
func (c *collective) sharpLen(f int) int {
	F := int64(c.sharp.run.FragmentBytes)
	return int(min(F, c.sched.Bytes-int64(f)*F))
}

// sharpMetrics adds the run's SHARP figures.
func (c *collective) sharpMetrics(m map[string]any) {
	st := c.sharp
	m["sharp_fragments"] = st.frags
	m["sharp_fragment_bytes"] = st.run.FragmentBytes
	m["sharp_osts"] = st.run.OSTs
	delete(m, "rdma_writes")
	delete(m, "steps")
	delete(m, "slice_bytes")
	delete(m, "reduce_ns_max")
}

// DefaultSharpOSTs is workload.sharp_osts' default: enough fragments in
// flight to cover a fragment's round trip through a two-level NDR fat
// tree, so that the window does not hold the host links back. A 4 KiB
// fragment's result comes back 2.6 µs after the post (doorbell, payload
// read, two switch hops up and two down, the receive and its poll:
// TestSharpBusBWBoundedByTheHostLinks), in which a 400 Gb/s link carries
// 31 fragments of 4174 wire bytes; 64 leaves room for a third level.
// SHARP's library chooses its own at run time (SHARP_COLL_OSTS_PER_GROUP:
// "dynamic", minimum 2): an assumption.
const DefaultSharpOSTs = 64

// MaxSharpOSTs bounds workload.sharp_osts.
const MaxSharpOSTs = 4096

// checkSharp checks the SHARP keys: in range, and set only with
// workload.algorithm sharp. The ranges come first, so that a value past a
// key's Go type names the key's range whatever the algorithm (fabric's
// overflowRange asks Validate about the type's bound and needs the range's
// message for it).
func (c *Config) checkSharp(prefix string) error {
	set := ""
	switch {
	case c.SharpOSTs != 0:
		set = "sharp_osts"
	case c.SharpFragmentBytes != 0:
		set = "sharp_fragment_bytes"
	case c.SharpALUGBps != 0:
		set = "sharp_alu_gbps"
	case c.SharpALUNs != 0:
		set = "sharp_alu_ns"
	}
	if c.SharpOSTs < 0 || c.SharpOSTs > MaxSharpOSTs {
		return fmt.Errorf("%s.sharp_osts: %d is out of range (0 for %d, 1 to %d)", prefix, c.SharpOSTs, DefaultSharpOSTs, MaxSharpOSTs)
	}
	if c.SharpFragmentBytes < 0 || c.SharpFragmentBytes > 4096 {
		return fmt.Errorf("%s.sharp_fragment_bytes: %d is out of range (0 for link.mtu, 1 to link.mtu)", prefix, c.SharpFragmentBytes)
	}
	if math.IsNaN(c.SharpALUGBps) || c.SharpALUGBps < 0 || c.SharpALUGBps > 1e6 {
		return fmt.Errorf("%s.sharp_alu_gbps: %v is out of range (0 for an ALU as fast as its inputs, up to 1e6 GB/s)", prefix, c.SharpALUGBps)
	}
	if math.IsNaN(c.SharpALUNs) || c.SharpALUNs < 0 || c.SharpALUNs > 1e6 {
		return fmt.Errorf("%s.sharp_alu_ns: %v is out of range (0 to 1e6 ns)", prefix, c.SharpALUNs)
	}
	if set != "" && c.Algorithm != AlgSharp {
		return fmt.Errorf("%s.%s is set, but workload.algorithm is %q; it describes the switches' aggregation (workload.algorithm: sharp), or remove the key", prefix, set, c.Algorithm)
	}
	return nil
}
