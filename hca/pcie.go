package hca

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
)

// pcieGenRate is a generation's per-lane transfer rate and line-code
// efficiency effNum/effDen.
type pcieGenRate struct {
	gts            int64 // GT/s per lane (bits per ns)
	effNum, effDen int64 // payload bits per line bit
}

// pcieGens: Gen3–5 use 128b/130b (ib-facts §8); Gen6 uses 256-byte FLITs
// of which 236 bytes carry TLPs (6 B DLP, 8 B CRC, 6 B FEC; PCIe 6.0 FLIT
// layout from a secondary source, muditbhargava66.github.io notes "Gen6 vs
// Legacy PCIe", the specification being members-only; ib-facts §8 marks
// the FLIT efficiency unconfirmed and gives ~121–126 GB/s, this gives
// 118 GB/s at x16; docs/validation.md has the correction).
var pcieGens = map[int]pcieGenRate{
	3: {8, 128, 130},
	4: {16, 128, 130},
	5: {32, 128, 130},
	6: {64, 236, 256},
}

// pcieDir is one direction of the PCIe link: TLPs are served whole, in the
// order they are reserved (FIFO arbitration in issue order).
type pcieDir struct {
	freeAt ib.PS // when the direction finishes its last reserved TLP
	busy   ib.PS // total time spent serialising TLPs
}

func (d *pcieDir) occupy(t, dur ib.PS) ib.PS {
	s := max(t, d.freeAt)
	d.freeAt = s + dur
	d.busy += dur
	return d.freeAt
}

// PCIe is the timing of the HCA's PCIe link, pure arithmetic with state: per
// direction the link is busy until some time, so concurrent DMAs share its
// bandwidth. Upstream (HCA to host) carries posted writes and read requests;
// downstream (host to HCA) carries read completions. Doorbells (MMIO) are a
// fixed latency: a few bytes that do not load the link measurably.
//
// Calls must come in non-decreasing time t (a simulation calls at its now).
type PCIe struct {
	cfg           PCIeConfig
	psNum, psDen  int64 // picoseconds per byte = psNum / psDen
	up, down      pcieDir
	tagFree       []ib.PS // ring: when each outstanding read's tag frees
	tagHead, tagN int
	readLat       ib.PS
	writeLat      ib.PS
	mmioLat       ib.PS
	ReadBytes     int64 // payload bytes read by the HCA
	WrittenBytes  int64 // payload bytes written by the HCA
	ReadRequests  int64 // read request TLPs sent
	TagStallPS    ib.PS // time read requests waited for a free tag
}

// NewPCIe builds the link model; cfg must have passed Validate.
func NewPCIe(cfg PCIeConfig) *PCIe {
	g, ok := pcieGens[cfg.Gen]
	if !ok {
		panic(fmt.Sprintf("hca: PCIe gen %d has no rate (config not validated)", cfg.Gen))
	}
	return &PCIe{
		cfg: cfg,
		// ps/byte = 8 bits × 1000 ps/ns / (GT/s × lanes × eff)
		psNum:    8000 * g.effDen,
		psDen:    g.gts * int64(cfg.Lanes) * g.effNum,
		tagFree:  make([]ib.PS, cfg.OutstandingReads),
		readLat:  ib.FromNanoseconds(cfg.ReadLatencyNS),
		writeLat: ib.FromNanoseconds(cfg.WriteLatencyNS),
		mmioLat:  ib.FromNanoseconds(cfg.MMIOLatencyNS),
	}
}

// SerPS returns the time to serialise bytes on one direction, rounded up.
func (p *PCIe) SerPS(bytes int) ib.PS {
	return ib.PS((int64(bytes)*p.psNum + p.psDen - 1) / p.psDen)
}

// PayloadGbps returns one direction's raw data rate in Gb/s (after line code).
func (p *PCIe) PayloadGbps() float64 { return 8000 / (float64(p.psNum) / float64(p.psDen)) }

// MMIO returns when a doorbell stored by the CPU at t reaches the HCA.
func (p *PCIe) MMIO(t ib.PS) ib.PS { return t + p.mmioLat }

// Write posts n bytes from the HCA to host memory starting at t, split into
// MPS-sized TLPs; it returns when the last byte is visible in memory.
func (p *PCIe) Write(t ib.PS, n int) ib.PS {
	p.WrittenBytes += int64(n)
	end := t
	for rest := n; rest > 0; rest -= p.cfg.MPSBytes {
		end = p.up.occupy(t, p.SerPS(min(rest, p.cfg.MPSBytes)+p.cfg.TLPOverheadBytes))
	}
	return end + p.writeLat
}

// WriteQueuedUntil returns when the upstream direction would finish n
// bytes of posted writes offered now, behind the TLPs already reserved on
// it: what the data of a packet just received waits for.
func (p *PCIe) WriteQueuedUntil(now ib.PS, n int) ib.PS {
	tlps := (n + p.cfg.MPSBytes - 1) / p.cfg.MPSBytes
	return max(now, p.up.freeAt) + p.SerPS(n+tlps*p.cfg.TLPOverheadBytes)
}

// Read fetches n bytes of host memory for the HCA starting at t: one read
// request per MRRS, each needing a free tag, answered after the read
// completion latency by completions of ReadCompletionBytes. It returns when
// the last completion has arrived at the HCA.
func (p *PCIe) Read(t ib.PS, n int) ib.PS {
	p.ReadBytes += int64(n)
	done := t
	for rest := n; rest > 0; {
		r := min(rest, p.cfg.MRRSBytes)
		rest -= r
		issue := t
		if p.tagN == len(p.tagFree) {
			// All tags in flight: wait for the oldest (completions return in
			// request order, so the oldest frees first).
			free := p.tagFree[p.tagHead]
			p.tagHead = (p.tagHead + 1) % len(p.tagFree)
			p.tagN--
			if free > issue {
				p.TagStallPS += free - issue
				issue = free
			}
		}
		// A read request is a header-only TLP upstream.
		reqAt := p.up.occupy(issue, p.SerPS(p.cfg.TLPOverheadBytes))
		p.ReadRequests++
		cplStart := reqAt + p.readLat
		end := cplStart
		for c := r; c > 0; c -= p.cfg.ReadCompletionBytes {
			end = p.down.occupy(cplStart, p.SerPS(min(c, p.cfg.ReadCompletionBytes)+p.cfg.CompletionOverheadBytes))
		}
		p.tagFree[(p.tagHead+p.tagN)%len(p.tagFree)] = end
		p.tagN++
		done = max(done, end)
	}
	return done
}

// Utilization returns the busy fraction of the upstream (HCA to host) and
// downstream (host to HCA) directions over [0, until].
func (p *PCIe) Utilization(until ib.PS) (up, down float64) {
	if until <= 0 {
		return 0, 0
	}
	return float64(p.up.busy) / float64(until), float64(p.down.busy) / float64(until)
}

// ReadBoundGbps returns the payload rate a stream of large DMA reads can
// reach: the smaller of the completion-efficiency bound raw × C / (C + O)
// and the tag bound tags × MRRS / round trip (Little's law).
// DLLPs (Ack, UpdateFC) are not modelled and would lower it slightly.
func (p *PCIe) ReadBoundGbps() float64 {
	c := float64(p.cfg.ReadCompletionBytes)
	o := float64(p.cfg.CompletionOverheadBytes)
	link := p.PayloadGbps() * c / (c + o)
	rtt := float64(p.SerPS(p.cfg.TLPOverheadBytes)+p.readLat) +
		float64(p.SerPS(p.cfg.MRRSBytes+p.cfg.CompletionOverheadBytes*p.cfg.MRRSBytes/p.cfg.ReadCompletionBytes))
	tags := float64(p.cfg.OutstandingReads) * float64(p.cfg.MRRSBytes) * 8 / rtt * 1000 // Gb/s
	return min(link, tags)
}

// retireTags frees the tags of reads whose completions are in by t.
func (p *PCIe) retireTags(t ib.PS) {
	for p.tagN > 0 && p.tagFree[p.tagHead] <= t {
		p.tagHead = (p.tagHead + 1) % len(p.tagFree)
		p.tagN--
	}
}

// TagsFree returns how many read requests may be issued at t without
// waiting for a tag.
func (p *PCIe) TagsFree(t ib.PS) int {
	p.retireTags(t)
	return len(p.tagFree) - p.tagN
}

// NextTagFree returns when the oldest outstanding read frees its tag (t if
// none is outstanding).
func (p *PCIe) NextTagFree(t ib.PS) ib.PS {
	p.retireTags(t)
	if p.tagN == 0 {
		return t
	}
	return p.tagFree[p.tagHead]
}

// BusyUntil returns when the link finishes the last TLP reserved on
// either direction: a received packet's buffer frees no later than the
// write its payload waits for, so after this the HCA holds no buffer space
// for work already booked.
func (p *PCIe) BusyUntil() ib.PS { return max(p.up.freeAt, p.down.freeAt) }

// Tags returns the number of read tags (hca.pcie.outstanding_reads).
func (p *PCIe) Tags() int { return len(p.tagFree) }

// ReadRequestsFor returns the read requests a DMA read of n bytes needs.
func (p *PCIe) ReadRequestsFor(n int) int { return (n + p.cfg.MRRSBytes - 1) / p.cfg.MRRSBytes }
