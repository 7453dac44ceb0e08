package switchasic

import (
	"maps"
	"sort"
	"strconv"

	"github.com/hcasim/hcasim/ib"
)

// ResetStats starts a new statistics window now (end of warm-up): buffer
// occupancy, credit stalls, arbitration losses, conflicts, link utilisation
// and the packet counters then cover only what follows.
func (sw *Switch) ResetStats() {
	now := sw.s.Now()
	sw.window = now
	sw.frozen = nil
	sw.counters = Counters{}
	for _, q := range sw.inVLs {
		if q != nil {
			q.occ.ResetWindow(now)
			q.arbLosses = 0
		}
	}
	for i := range sw.out {
		out := &sw.out[i]
		for v := range out.stall {
			out.stall[v].ResetWindow(now)
		}
		out.conflicts, out.dataBusy = 0, 0
		st := sw.ports[i].Stats()
		out.txPackets0, out.txBlocks0 = st.DataPackets, st.DataBlocks
	}
}

// VLStats are one port's statistics for one VL over the window.
type VLStats struct {
	BufMeanBlocks float64 // time-weighted mean input-buffer occupancy, 64-byte blocks
	BufPeakBlocks int64   // peak input-buffer occupancy, blocks
	BufHistPS     []ib.PS // time at each occupancy bucket (BufHistWidth blocks wide; last = and above)
	BufHistWidth  int64
	CreditStallPS ib.PS  // output side: time a ready packet waited for downstream credits on this VL
	ArbLosses     uint64 // input side: rounds a sendable head of this VL was not granted
}

// PortStats are one port's statistics over the window.
type PortStats struct {
	TxPackets     uint64  // data packets sent
	TxBlocks      uint64  // 64-byte blocks sent
	LinkUtil      float64 // fraction of the window the wire carried data packets
	XbarConflicts uint64  // rounds in which two or more inputs requested this output
}

// FreezeStats ends the statistics window now: Metrics returns, from now on,
// the window's figures as they stand at this moment, whatever happens after
// it (a drain phase), until ResetStats starts a new window.
func (sw *Switch) FreezeStats() {
	sw.frozen = nil
	sw.statsEnd = sw.s.Now()
	sw.frozen = sw.Metrics()
}

// EndStatsAt ends the statistics window at t instead of the simulation's
// current time: a partitioned run (components.Group) ends when its last
// packet lands, and a partition may have run up to a lookahead past that,
// or, stopped, lie behind the latest partition.
func (sw *Switch) EndStatsAt(t ib.PS) { sw.statsEnd = t }

// statsNow is the end of the statistics window.
func (sw *Switch) statsNow() ib.PS {
	if sw.statsEnd > 0 {
		return sw.statsEnd
	}
	return sw.s.Now()
}

// VLStats returns port i's statistics for VL vl (data VL or 15).
func (sw *Switch) VLStats(i, vl int) VLStats {
	now := sw.statsNow()
	var st VLStats
	if q := sw.inputVL(i, vl); q != nil {
		st.BufMeanBlocks = q.occ.Mean(now)
		st.BufPeakBlocks = q.occ.Peak()
		st.BufHistPS = q.occ.Histogram(now)
		st.BufHistWidth = q.occ.BucketWidth()
		st.ArbLosses = q.arbLosses
	}
	st.CreditStallPS = sw.out[i].stall[vl].Total(now)
	return st
}

// PortStats returns port i's statistics.
func (sw *Switch) PortStats(i int) PortStats {
	out := &sw.out[i]
	// Every data packet on a switch port went out through trySend: the
	// port's counters since the window started are the output's.
	ps := sw.ports[i].Stats()
	st := PortStats{TxPackets: ps.DataPackets - out.txPackets0, TxBlocks: ps.DataBlocks - out.txBlocks0, XbarConflicts: out.conflicts}
	if span := sw.statsNow() - sw.window; span > 0 {
		st.LinkUtil = float64(min(out.dataBusy, span)) / float64(span)
	}
	return st
}

// Metrics returns the window's statistics as a flat map with snake_case
// keys: switch-wide counters, then per port "port<i>_<name>" and per port
// and VL "port<i>_vl<v>_<name>" (VLs that saw no traffic are left out).
// MetricKeys gives them in a stable order.
func (sw *Switch) Metrics() map[string]float64 {
	if sw.frozen != nil {
		return maps.Clone(sw.frozen)
	}
	m := map[string]float64{
		"packets_received":         float64(sw.counters.Received),
		"packets_forwarded":        float64(sw.counters.Forwarded),
		"packets_dropped_no_route": float64(sw.counters.DropRoute),
		"packets_dropped_sl2vl":    float64(sw.counters.DropSL2VL),
		"block_hops":               float64(sw.counters.BlockHops),
		"alloc_rounds":             float64(sw.counters.AllocRound),
	}
	if sw.mft != nil {
		// Replication counters, only on a switch with an MFT (unicast
		// runs report what they reported before multicast existed).
		c := sw.counters
		m["mcast_packets_received"] = float64(c.McastReceived)
		m["mcast_packets_done"] = float64(c.McastDone)
		m["mcast_copies"] = float64(c.McastCopies)
		m["mcast_grant_rounds"] = float64(c.McastRounds)
		if sw.mcHold {
			// Reported under hold only, so split runs report what they did.
			m["mcast_held_packets"] = float64(c.McastHeld)
		}
		if c.McastDone > 0 {
			m["mcast_hold_mean_ns"] = c.McastHold.Nanoseconds() / float64(c.McastDone)
		}
	}
	for i := 0; i < sw.radix; i++ {
		p := "port" + strconv.Itoa(i) + "_"
		ps := sw.PortStats(i)
		m[p+"tx_packets"] = float64(ps.TxPackets)
		m[p+"tx_blocks"] = float64(ps.TxBlocks)
		m[p+"link_util"] = ps.LinkUtil
		m[p+"xbar_conflicts"] = float64(ps.XbarConflicts)
		for vl := 0; vl < 16; vl++ {
			if vl >= sw.cfg.VLs && vl != ib.ManagementVL {
				continue
			}
			st := sw.VLStats(i, vl)
			if st.BufPeakBlocks == 0 && st.CreditStallPS == 0 && st.ArbLosses == 0 {
				continue
			}
			pv := p + "vl" + strconv.Itoa(vl) + "_"
			m[pv+"buf_mean_blocks"] = st.BufMeanBlocks
			m[pv+"buf_peak_blocks"] = float64(st.BufPeakBlocks)
			m[pv+"credit_stall_ps"] = float64(st.CreditStallPS)
			m[pv+"arb_losses"] = float64(st.ArbLosses)
			for k, d := range st.BufHistPS {
				m[pv+"buf_hist"+strconv.Itoa(k)+"_ps"] = float64(d)
			}
		}
	}
	return m
}

// MetricKeys returns m's keys sorted, for deterministic reports.
func MetricKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
