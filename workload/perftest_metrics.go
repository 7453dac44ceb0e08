package workload

import (
	"fmt"
	"math"
	"slices"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// metrics builds the run's metrics map (docs/hca.md lists every key) but
// latency_breakdown, which Run adds from the pass whose Timeline holds the
// breakdown's iteration (p itself, or a second pass that traced the median
// iteration).
func (p *perftest) metrics() map[string]any {
	run := p.run
	span := p.end - p.start
	msgs := run.Iterations * run.QPs
	m := map[string]any{
		"test":          run.Test,
		"size_bytes":    run.Size,
		"iterations":    run.Iterations,
		"qps":           run.QPs,
		"inline":        p.inline,
		"sim_time_ns":   float64(span) / 1000,
		"events":        p.s.Events(),
		"data_verified": len(p.errs) == 0,
	}
	if len(p.errs) > 0 {
		m["data_errors"] = p.errs
	}
	if span > 0 {
		// perftest: bandwidth = payload bytes / time; 10^9 b/s.
		m["bw_gbps"] = float64(run.Size) * float64(msgs) * 8 / float64(span) * 1000
		m["msg_rate_mpps"] = float64(msgs) / float64(span) * 1e6
	}
	if p.isLat {
		v, div := p.latSamples()
		l := Latencies{v: slices.Clone(v)}
		m["lat_us"] = latSummaryUs(&l, div)
	}
	stages := map[string]any{}
	pcie := map[string]any{}
	for side, d := range p.dev {
		host := "host0"
		if side == 1 {
			host = "host1"
		}
		st := d.StageStats()
		hs := map[string]any{}
		for i, s := range st {
			hs[hca.StageNames[i]] = map[string]any{"busy_fraction": s.Busy, "occupancy": s.Occupancy, "items": s.Items}
		}
		stages[host] = hs
		up, down := d.PCIeUtilization()
		pcie[host+"_up"] = up
		pcie[host+"_down"] = down
		c := d.Counters
		if side == 0 {
			m["retries"] = retries(p.qp[0])
			m["timeouts"] = c.Timeouts
			m["acks_dropped"] = c.AcksDropped
		}
		m[host+"_acks_sent"] = c.Acks
		m[host+"_naks_sent"] = c.Naks
		m[host+"_rnr_naks_sent"] = c.RNRNaks
		m[host+"_cq_overruns"] = c.CQOverruns
		m[host+"_recv_wqe_waited"] = c.RecvWQEWaits
		if run.UseEvent {
			// perftest -e: completion events delivered to the host's
			// channel and the MSI-X interrupts its HCA sent.
			m[host+"_cq_events"] = c.CQEvents
			m[host+"_interrupts"] = c.Interrupts
		}
		if p.ud {
			// UD is unreliable: a datagram without a receive WQE (or with a
			// bad Q_Key) is dropped, never retried.
			m[host+"_ud_drops"] = c.UDDrops
		}
		kc := d.KeyCache()
		if kc.Hits+kc.Misses > 0 {
			m[host+"_key_cache_miss_rate"] = float64(kc.Misses) / float64(kc.Hits+kc.Misses)
		}
		if mc := d.MTTCache(); mc != nil && mc.Hits+mc.Misses > 0 {
			m[host+"_mtt_cache_miss_rate"] = float64(mc.Misses) / float64(mc.Hits+mc.Misses)
		}
		var ctx ctxTally
		ctx.add(d)
		ctx.put(m, host+"_")
	}
	m["stages"] = stages
	m["pcie_utilization"] = pcie
	m["pcie_gbps_per_direction"] = p.dev[0].PCIe.PayloadGbps()
	data := p.dataSide()
	busy := p.dev[data].Port.BusyThrough() - p.linkBusyAt0[data]
	m["link_utilization"] = float64(busy) / math.Max(1, float64(span))
	return m
}

// dataSide returns the host whose outgoing wire carries the test's data:
// the client's (host 0) for WRITE and SEND, whose requests carry the
// payload, and the server's (host 1) for READ and atomics, whose responses
// carry it back (read responses; the atomic's original value). The
// ping-pong tests send the same message both ways; host 0's side counts.
func (p *perftest) dataSide() int {
	if p.op == hca.WRRDMARead || p.op == hca.WRFetchAdd {
		return 1
	}
	return 0
}

func retries(qps []*hca.QP) int64 {
	var n int64
	for _, qp := range qps {
		if r := qp.Requester(); r != nil {
			n += r.Retries
		}
	}
	return n
}

// latSamples returns the latency samples in iteration order and what each
// is divided by to give the latency: the ping-pong tests (write_lat,
// send_lat) report half the time between successive posts, so their samples
// are those round trips, divided by 2 (perftest halves in floating point;
// halving whole picoseconds here would round half of them down); read_lat
// and atomic_lat report post → CQE seen.
func (p *perftest) latSamples() (v []int64, div float64) {
	if p.op == hca.WRRDMAWrite || p.op == hca.WRSend {
		v = make([]int64, 0, max(0, len(p.stamps)-1))
		for i := 0; i+1 < len(p.stamps); i++ {
			v = append(v, int64(p.stamps[i+1]-p.stamps[i]))
		}
		return v, 2
	}
	return p.lat.v, 1
}

// latSummaryUs is the lat_us object with perftest's statistics: min,
// typical (median), avg, p99, p999 (99.9 %), max, stdev, in µs, of the
// samples in l each divided by div.
func latSummaryUs(l *Latencies, div float64) map[string]any {
	l.Sort()
	us := func(p ib.PS) float64 { return float64(p) / div / 1e6 }
	if l.Len() == 0 {
		return map[string]any{"count": 0}
	}
	mean := l.Mean()
	var ss float64
	for _, v := range l.v {
		ss += (float64(v) - mean) * (float64(v) - mean)
	}
	return map[string]any{
		"count":   l.Len(),
		"min":     us(ib.PS(l.v[0])),
		"typical": us(l.Quantile(0.5)),
		"avg":     mean / div / 1e6,
		"p99":     us(l.Quantile(0.99)),
		"p999":    us(l.Quantile(0.999)),
		"max":     us(ib.PS(l.v[len(l.v)-1])),
		"stdev":   math.Sqrt(ss/float64(l.Len())) / div / 1e6,
	}
}

// segment is one stretch of the traced message's passage, in picoseconds.
type segment struct {
	name string
	ps   ib.PS
}

// breakdown returns the traced iteration's time per segment, in pipeline
// order, as [{"segment": name, "ns": t}, …, {"segment": "total", …}];
// segments that do not apply to the test are left out. In a latency test
// the traced iteration is one whose sample is the reported median, and the
// segments add up to it: read_lat and atomic_lat measure post → CQE seen,
// one message; write_lat and send_lat half a round trip, so each segment is
// the mean of the ping's and the pong's. A bandwidth test traces its middle
// message, whose app_poll is host.poll_ns.
func (p *perftest) breakdown() []any {
	var segs []segment
	var div ib.PS = 1
	k := p.traceIter
	switch {
	case !p.isLat:
		segs = p.segments(&p.tl, -1)
	case p.op == hca.WRRDMAWrite || p.op == hca.WRSend:
		// The ping ends when the server posts the pong (p.tl.Posted), the
		// pong when the client posts the next ping.
		ping := p.segments(&p.tlPing, p.tl.Posted)
		pong := p.segments(&p.tl, p.stamps[k+1])
		segs, div = addSegments(ping, pong), 2
	default:
		segs = p.segments(&p.tl, p.stamps[k]+ib.PS(p.lat.v[k]))
	}
	var out []any
	var total ib.PS
	for _, sg := range segs {
		out = append(out, map[string]any{"segment": sg.name, "ns": float64(sg.ps) / float64(div) / 1000})
		total += sg.ps
	}
	if len(segs) > 0 {
		out = append(out, map[string]any{"segment": "total", "ns": float64(total) / float64(div) / 1000})
	}
	return out
}

// segments splits tl's message from its post to end (the application's
// next action: its next post, or the poll that saw the completion) into the
// stretches between the pipeline points it passed; app_poll is the last,
// from the message's final point to end. end < 0 takes host.poll_ns.
func (p *perftest) segments(tl *hca.Timeline, end ib.PS) []segment {
	pts := []struct {
		name string
		t    ib.PS
	}{
		{"start", tl.Posted},
		{"cpu_post", tl.DoorbellStore},
		{"mmio_doorbell", tl.Doorbell},
		{"doorbell_stage", tl.DoorbellDone},
		{"wqe_fetch_and_key_check", tl.WQEReady},
		{"schedule_and_dma_read", tl.DMAReadDone},
		{"transport_tx", tl.TxReady},
		{"tx_queue", tl.WireStart},
		{"wire", tl.RxTail},
		{"transport_rx", tl.RxDone},
		{"responder_key_check", tl.RespKey},
	}
	switch p.op {
	case hca.WRRDMAWrite:
		pts = append(pts, struct {
			name string
			t    ib.PS
		}{"payload_write_visible", tl.RespWrite})
	case hca.WRSend:
		pts = append(pts, struct {
			name string
			t    ib.PS
		}{"payload_and_cqe_visible", tl.RespCQE})
	default:
		pts = append(pts, struct {
			name string
			t    ib.PS
		}{"response_and_requester_cqe", tl.ReqCQE})
	}
	if !tl.Started() {
		return nil
	}
	var segs []segment
	prev := tl.Posted
	for _, pt := range pts[1:] {
		if pt.t == 0 {
			continue
		}
		segs = append(segs, segment{pt.name, pt.t - prev})
		prev = pt.t
	}
	if end < 0 {
		end = prev + p.pollPS
	}
	return append(segs, segment{"app_poll", end - prev})
}

// addSegments adds b's times to a's by name, keeping a's order (a ping and
// its pong pass the same points).
func addSegments(a, b []segment) []segment {
	out := slices.Clone(a)
	for _, sb := range b {
		i := slices.IndexFunc(out, func(s segment) bool { return s.name == sb.name })
		if i < 0 {
			panic(fmt.Sprintf("workload: the pong passed %s, the ping did not", sb.name))
		}
		out[i].ps += sb.ps
	}
	return out
}
