package workload

import (
	"math"
	"slices"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
)

// metrics builds the run's metrics map (docs/hca.md lists every key).
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
		kc := d.KeyCache()
		if kc.Hits+kc.Misses > 0 {
			m[host+"_key_cache_miss_rate"] = float64(kc.Misses) / float64(kc.Hits+kc.Misses)
		}
	}
	m["stages"] = stages
	m["pcie_utilization"] = pcie
	m["pcie_gbps_per_direction"] = p.dev[0].PCIe.PayloadGbps()
	data := p.dataSide()
	busy := p.dev[data].Port.BusyThrough() - p.linkBusyAt0[data]
	m["link_utilization"] = float64(busy) / math.Max(1, float64(span))
	m["latency_breakdown"] = p.breakdown()
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

// breakdown returns the traced message's time per segment, in pipeline
// order, as [{"segment": name, "ns": t}, …]; segments that do not apply
// to the test are left out. The segments add up to total_ns.
func (p *perftest) breakdown() []any {
	tl := &p.tl
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
	var out []any
	prev := ib.PS(0)
	first := ib.PS(0)
	for i, pt := range pts {
		if pt.t == 0 {
			continue
		}
		if i == 0 {
			prev, first = pt.t, pt.t
			continue
		}
		out = append(out, map[string]any{"segment": pt.name, "ns": float64(pt.t-prev) / 1000})
		prev = pt.t
	}
	if first != 0 {
		out = append(out, map[string]any{"segment": "app_poll", "ns": float64(p.pollPS) / 1000})
		out = append(out, map[string]any{"segment": "total", "ns": float64(prev+p.pollPS-first) / 1000})
	}
	return out
}
