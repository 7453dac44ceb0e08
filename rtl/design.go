package rtl

import (
	"fmt"
	"strings"

	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
)

// Design is what the emitter needs from a config: a plain struct so that rtl
// does not depend on the config package. Each field names the config key it
// comes from; errors from Validate name that key.
type Design struct {
	// Name identifies the config in every generated header (the config's name
	// or its file path).
	Name string
	// Overrides are the --set key=value overrides the design was loaded with,
	// in order; the header's regenerate command repeats them.
	Overrides []string
	// SweepIgnored are the config's sweep: axes that change nothing the RTL
	// reads (workload.*, cable lengths, stage latencies): one tree serves
	// every point of them, and Main says so on stderr.
	SweepIgnored []string
	// Radix is the switch port count (switch.radix), 2..256 (IBA 1.6 allows
	// 256-port switches; ib-facts.md §4).
	Radix int
	// VLs is the number of data VLs per port (switch.vls), 1, 2, 4, 8 or 15;
	// the HCA port has the same count. VL15 (management) comes on top.
	VLs int
	// VLBufferBytes is the switch input buffer per port per VL in bytes
	// (switch.vl_buffer_bytes); a multiple of 64, one credit block.
	VLBufferBytes int
	// HCAVLBufferBytes is the HCA receive buffer per VL in bytes
	// (hca.vl_buffer_bytes); a multiple of 64.
	HCAVLBufferBytes int
	// MTU is the path MTU in payload bytes (link.mtu): 256..4096.
	MTU int
	// WQEPrefetchDepth is the send WQE fetch window per QP in WQEBBs
	// (hca.wqe_prefetch_depth), 1..256; 0 means the HCA default (8).
	// hca_wqe_fetch's block buffer holds that many blocks.
	WQEPrefetchDepth int
	// PCIeMRRSBytes is the PCIe max read request size (hca.pcie.mrrs_bytes),
	// 128..4096, a power of two; 0 means the HCA default (512).
	// hca_dma_engine splits reads into host requests of at most that many
	// bytes, never across an MRRS-aligned address.
	PCIeMRRSBytes int
	// PCIeMPSBytes is the PCIe max payload size (hca.pcie.mps_bytes),
	// 128..4096, a power of two; 0 means the HCA default (256).
	// hca_dma_engine sends writes as TLPs of at most that many bytes,
	// none across 4 KiB (hca.WriteTLP).
	PCIeMPSBytes int
	// PCIeOutstandingReads is the number of read tags
	// (hca.pcie.outstanding_reads), 1..768; 0 means the HCA default (64).
	// Above 256 the RTL uses PCIe's 10-bit tags; the model allows up to
	// 1024, of which 10-bit tags carry 768.
	PCIeOutstandingReads int
	// LinkGeneration is the IB speed (link.generation): sdr, ddr, qdr, fdr10,
	// fdr, edr, hdr, ndr or xdr, in any case.
	LinkGeneration string
	// LinkWidth is the lane count (link.width, "4x" = 4): 1, 2, 4, 8 or 12;
	// 2 exists from HDR on (ib-facts.md §1).
	LinkWidth int
	// KeyCacheEntries is the MPT cache of hca_key_check
	// (hca.key_cache_entries; 0 means the HCA default, 256), 1..256: fully
	// associative with exact least-recently-used replacement, as the
	// model's, which costs a tag compare and an age per entry.
	KeyCacheEntries int
	// RetryCnt and RNRRetry are hca.retry_cnt and hca.rnr_retry, 0..7 (7
	// infinite): hca_requester's retry counters (RETRY_CNT, RNR_RETRY).
	// LoadDesign takes them from the config (default 7); a Design literal
	// that leaves them 0 builds a requester that never retries (the first
	// sequence error or RNR NAK exhausts it).
	RetryCnt, RNRRetry int
	// RetryTimeout is hca.retry_timeout, IBA's local ACK timeout exponent
	// t, 0..31: the timeout is 4.096 us x 2^t, 0 none (hca.RetryTimeoutPS);
	// hca_requester's RETRY_TIMEOUT. LoadDesign takes it from the config
	// (default 14, 67 ms); a Design literal that leaves it 0 builds
	// requesters without the timer.
	RetryTimeout int
	// AckCoalesce is hca.ack_coalesce, 1..1024: the AckReq packets one of
	// hca_responder's ACKs may cover (ACK_COALESCE). LoadDesign takes it
	// from the config (default 1); a Design literal that leaves it 0 builds
	// a responder that ACKs every AckReq packet, as 1 does.
	AckCoalesce int
	// MaxInline is hca.max_inline_bytes, 0..hca.MaxInlineLimit (988): the
	// most inline bytes hca_requester sends from a WQE's own blocks
	// (MAX_INLINE; a longer inline WQE completes with LOC_QP_OP_ERR, as
	// the driver refuses such a post). LoadDesign takes it from the config
	// (default 236, perftest's RC inline size); a Design literal that
	// leaves it 0 builds a requester that sends only empty inline WQEs.
	MaxInline int
	// MaxRdAtomic is hca.max_rd_atomic, 1..255: the responder resources
	// (READs kept for duplicates) per context of hca_responder (RD_RES),
	// and hca_requester's limit per context on READs and atomics taken
	// and not retired (MAX_RD_ATOMIC = RD_RES, the model's
	// Requester.MaxRdAtomic).
	// LoadDesign takes it from the config (default 16); a Design literal
	// that leaves it 0 builds 16.
	MaxRdAtomic int
	// SwitchClockMHz and HCAClockMHz are the cores' clocks
	// (switch.core_clock_mhz, hca.core_clock_mhz; 0 means 1000), the
	// period rounded to a whole picosecond as the simulator rounds it
	// (ib.CyclePS). They turn the flow-control intervals into cycles.
	SwitchClockMHz, HCAClockMHz float64
	// FCRefreshNs is link.fc_refresh_ns (0 means 6000): every VL sends a
	// flow-control packet at least this often (fc_scheduler).
	// FCMinIntervalNs is link.fc_min_interval_ns: the shortest gap between
	// a VL's flow-control packets for a change.
	FCRefreshNs, FCMinIntervalNs float64
	// DatapathBytes is the switch datapath width (switch.datapath_bytes);
	// 0 means 64. The skeleton moves one 64-byte credit block per cycle, so
	// 64 is the only width it supports.
	DatapathBytes int

	// The switch keys below choose a micro-architecture. The RTL builds one
	// value of each (two allocators reduce to the same hardware), the zero
	// value means it, and Validate refuses any other, so a design point the
	// RTL does not build is never exported as if it were (docs/rtl.md lists
	// every key and the decision).

	// SharedBufferBytes is the input port's pool shared by its VLs
	// (switch.shared_buffer_bytes). The RTL's VL buffers are static, one
	// sync_fifo per VL, so only 0.
	SharedBufferBytes int
	// Queueing is switch.queueing. sw_input_unit keeps one FIFO per VL and
	// requests the output of each VL's head, so only fifo ("" = fifo).
	Queueing string
	// Allocator is switch.allocator. sw_xbar_alloc is one iSLIP iteration
	// (a round-robin grant arbiter per output, an accept arbiter per input)
	// over a request per input VL's head. With one VL an input requests one
	// output, and separable input-first and iSLIP (any number of iterations)
	// all reduce to it, so both are taken ("" = islip); with more VLs only
	// islip with one iteration. Wavefront's rotating diagonal priority is
	// not built.
	Allocator string
	// ISLIPIterations is switch.islip_iterations (0 means 1): more than one
	// only with one VL (above).
	ISLIPIterations int
	// Speedup is switch.speedup, crossbar connections one input may hold at
	// once; 0 means 1. An input unit drains one packet at a time, so only 1.
	Speedup int
	// StoreAndForward is switch.cut_through = false. The input unit offers a
	// packet to the allocator as soon as its head block is in and the
	// crossbar passes each block on as it arrives, so only cut-through.
	StoreAndForward bool
	// AdaptiveRouting is topology.adaptive_routing. The RTL's route stage
	// looks up the LFT alone: no AR group table and no load-based choice,
	// so it is refused.
	AdaptiveRouting bool
	// SL2VL is the switches' SL-to-VL programming (switch.sl2vl and
	// switch.sl2vl_pairs, resolved per switch and port pair as the
	// simulator's subnet manager resolves them), one set per distinct
	// programming; sw_sl2vl holds it as constants. Empty means one set
	// with no per-pair tables and OpenSM's default table masked to VLs,
	// what an empty switch.sl2vl gives.
	SL2VL []SL2VLSet
}

// Fixed micro-architecture choices of the emitted skeleton (not config keys;
// docs/rtl.md lists them).
const (
	// BlockBytes is the datapath width: one 64-byte credit block per cycle, so
	// one FIFO entry is one credit and the credit counters count FIFO entries.
	BlockBytes = ib.CreditBytes
	// LaneBits is the parallel width of one SerDes lane at the PCS interface.
	LaneBits = 64
	// CreditBits is the width of FCTBS, FCCL and ABR (ib-facts.md §3).
	CreditBits = 12
	// lftTop is the highest unicast LID (ib-facts.md §4: 0x0001..0xBFFF;
	// 0xC000 up is multicast): a switch's forwarding table holds DLIDs
	// 0..lftTop, 48K entries.
	lftTop = 0xBFFF
	// cqnW is the width of a CQ number at hca_cqe_writer, whose CQ
	// contexts are registers: 2^4 = 16 CQs. The simulator's workloads
	// create two per HCA (perftest: a send and a receive CQ) or two per
	// rank an HCA serves; a design that needs more sets CQN_W on hca_top.
	cqnW = 4
	// qpnW is the width of a send queue context index at hca_wqe_fetch,
	// whose contexts are registers: 2^3 = 8 QPs, indexed by a QPN's low
	// bits. The simulator's workloads create one QP per connection an HCA
	// serves (perftest: one); a design that needs more sets QPN_W on
	// hca_top.
	qpnW = 3
	// maxKeyCache is the largest MPT cache hca_key_check builds: a tag
	// compare and an age comparator per entry (fully associative, exact
	// LRU, as the model's); 256, the HCA default, synthesises in about a
	// minute of Yosys.
	maxKeyCache = 256
	// maxWQEPrefetch is the largest hca.wqe_prefetch_depth (the config's
	// own bound, hca.Config.Validate).
	maxWQEPrefetch = 256
	// maxReadTags is the most read tags hca_dma_engine numbers: 8-bit tags
	// give 256, PCIe's 10-bit tags 768 (values 256..1023: a 10-bit tag
	// requester leaves Tag[9:8] = 0 to 8-bit tags).
	maxReadTags = 768
	// maxBufferBlocks is the largest VL buffer the 12-bit credit counters can
	// describe: the sender's window is 2048 blocks (credit.Sender).
	maxBufferBlocks = ib.CreditModulus / 2
)

// generations are the IB speeds a link may have (ib-facts.md §1).
var generations = []string{"sdr", "ddr", "qdr", "fdr10", "fdr", "edr", "hdr", "ndr", "xdr"}

// Params are the Verilog parameters that follow from a Design.
type Params struct {
	Ports        int // PORTS: switch radix
	PortW        int // PORT_W: bits of a port select, $clog2(PORTS)
	VLs          int // VLS: data VLs
	VLW          int // VL_W: bits of an internal data-VL index, $clog2(VLS) or 1
	DataW        int // DATA_W: datapath bits, one 64-byte block
	BufDepth     int // BUF_DEPTH: switch VL buffer entries (blocks)
	BufAddrW     int // BUF_ADDR_W: $clog2(BUF_DEPTH)
	HCABufDepth  int // HCA_BUF_DEPTH: HCA VL buffer entries (blocks)
	HCABufAddrW  int // HCA_BUF_ADDR_W
	PeerDepth    int // PEER_DEPTH: credits per VL before the peer's first FC packet (Params says why)
	Lanes        int // LANES: link width
	LaneW        int // LANE_W: bits per lane per cycle
	VLArbEntries int // VLARB_ENTRIES: entries per VL arbitration table
	MaxPktBlocks int // 64-byte blocks of the largest packet at the MTU (the files' header; no Verilog parameter: credits are checked per packet)
	LFTTop       int // LFT_TOP: highest DLID a forwarding table holds, every unicast LID (lftTop)
	CQNW         int // CQN_W: bits of a CQ number, 2^CQN_W CQ contexts in hca_cqe_writer (cqnW)
	QPNW         int // QPN_W: bits of a send queue context index, 2^QPN_W in hca_wqe_fetch (qpnW)
	WQEPrefetch  int // WQE_PREFETCH_DEPTH: WQEBBs in flight per QP (hca.wqe_prefetch_depth)
	KeyCache     int // KEY_CACHE_ENTRIES: hca_key_check's MPT cache (hca.key_cache_entries)
	MRRS         int // MRRS_BYTES: max read request bytes (hca.pcie.mrrs_bytes)
	MPS          int // MPS_BYTES: max write TLP payload bytes (hca.pcie.mps_bytes)
	ReadTags     int // OUTSTANDING_READS: read tags (hca.pcie.outstanding_reads)
	TagW         int // TAG_W: host_rd_tag bits, 8 or (above 256 tags) 10
	ROBBlocks    int // hca_dma_engine's reorder ring per read client, blocks: 2^max(clog2(ReadTags × MRRS/64), clog2(MRRS/64) + 1)
	MTU          int // MTU_BYTES
	Generation   string

	// FC_REFRESH_CYCLES and FC_MIN_CYCLES of the switch's and the HCA's
	// transmit ports: link.fc_refresh_ns in core cycles rounded down (a
	// refresh at least as often as asked), link.fc_min_interval_ns rounded
	// up (a gap at least as long); fcCycles.
	SwFCRefreshCycles, SwFCMinCycles   int
	HCAFCRefreshCycles, HCAFCMinCycles int

	RetryCnt int // RETRY_CNT: hca.retry_cnt (hca_requester)
	RNRRetry int // RNR_RETRY: hca.rnr_retry
	// RNRTick is RNR_TICK: HCA core cycles in 10 us, the unit of every RNR
	// timer code's delay (ib-facts.md §5, hca.RNRTimerPS), rounded to the
	// nearest cycle.
	RNRTick int
	// RetryTimeout is RETRY_TIMEOUT: hca.retry_timeout (0 none).
	RetryTimeout int
	// ACKTick is ACK_TICK: HCA core cycles in 4.096 us, the local ACK
	// timeout's unit (hca.RetryTimeoutPS(t) = 4.096 us x 2^t), rounded to
	// the nearest cycle; the timer runs ACK_TICK x 2^RETRY_TIMEOUT cycles.
	ACKTick int
	// AckCoalesce is ACK_COALESCE: hca.ack_coalesce (hca_responder).
	AckCoalesce int
	// MaxInline is MAX_INLINE: hca.max_inline_bytes (hca_requester).
	MaxInline int
	// RdRes is RD_RES: hca.max_rd_atomic (hca_responder's resources per context,
	// hca_requester's MAX_RD_ATOMIC).
	RdRes int
	// PKeyN is PKEY_N: entries of hca_rx_ack's P_Key table (PKeyTableEntries;
	// the model has no P_Key table: every port is in the default partition).
	PKeyN int
	// MaxRSGE is MAX_RSGE: the elements a receive WQE may carry at hca_top's
	// hca_rq, hca.MaxRecvSGE (no config key: a QP's max_recv_sge is the
	// workload's, so the chip holds the device's largest list).
	MaxRSGE int
}

// PKeyTableEntries is the size of the HCA port's P_Key table in the RTL
// (hca_rx_ack's PKEY_N, IBA's NodeInfo.PartitionCap): a few partitions per
// port, 16 flops and a 15-bit compare each. No config key sets it: the model
// has no partitions (every packet and port carries the default P_Key
// 0xFFFF), so there is no value of the model's to take.
const PKeyTableEntries = 4

// MaxPacketBytes is the largest packet on the wire at a path MTU, the one the
// simulator checks its VL buffers against (switchasic.MaxPacketBytes): RDMA
// WRITE ONLY with immediate, LRH + BTH + RETH + ImmDt + payload + ICRC +
// VCRC, no GRH, as traffic inside one subnet (4142 bytes, 65 blocks, at MTU
// 4096). Taking the simulator's rule keeps every buffer depth a sweep can
// choose exportable.
func MaxPacketBytes(mtu int) int {
	return switchasic.MaxPacketBytes(mtu)
}

// Validate checks d and returns the first problem as a one-line error that
// names the config key, the bad value and what is allowed.
func (d Design) Validate() error {
	if d.DatapathBytes != 0 && d.DatapathBytes != BlockBytes {
		return fmt.Errorf("switch.datapath_bytes: %d is not supported by the RTL skeleton, which moves one 64-byte credit block per cycle (64)", d.DatapathBytes)
	}
	if d.SharedBufferBytes != 0 {
		return fmt.Errorf("switch.shared_buffer_bytes: %d is not supported by the RTL, whose VL buffers are static with no shared pool (0)", d.SharedBufferBytes)
	}
	if d.Queueing != "" && d.Queueing != switchasic.QueueFIFO {
		return fmt.Errorf("switch.queueing: %q is not supported by the RTL, whose input unit keeps one FIFO per VL (%s: --set switch.queueing=%s exports that design; the simulator's default is voq)", d.Queueing, switchasic.QueueFIFO, switchasic.QueueFIFO)
	}
	if d.Allocator != "" && d.Allocator != components.AllocISLIP && d.Allocator != components.AllocSeparable {
		return fmt.Errorf("switch.allocator: %q is not supported by the RTL, whose allocator is a round-robin arbiter per output (%s, %s)",
			d.Allocator, components.AllocSeparable, components.AllocISLIP)
	}
	if d.Speedup != 0 && d.Speedup != 1 {
		return fmt.Errorf("switch.speedup: %d is not supported by the RTL, where an input holds one crossbar connection at a time (1)", d.Speedup)
	}
	if d.StoreAndForward {
		return fmt.Errorf("switch.cut_through: false is not supported by the RTL, which forwards each block as it arrives (true)")
	}
	if d.AdaptiveRouting {
		return fmt.Errorf("topology.adaptive_routing: true is not supported by the RTL, whose route stage takes the LFT's port alone, with no AR groups or load-based choice (false)")
	}
	if d.Radix < 2 || d.Radix > components.MaxPorts {
		return fmt.Errorf("switch.radix: %d is outside 2..%d (IBA 1.6 allows up to 256 ports)", d.Radix, components.MaxPorts)
	}
	if !ib.ValidVLCount(d.VLs) {
		return fmt.Errorf("switch.vls: %d is not a VL count an IB port supports (1, 2, 4, 8, 15)", d.VLs)
	}
	if d.VLs > 1 && d.Allocator == components.AllocSeparable {
		return fmt.Errorf("switch.allocator: %q is not supported by the RTL with switch.vls %d, whose allocator is one iSLIP iteration over a request per input VL (%s; %s only with one VL)",
			d.Allocator, d.VLs, components.AllocISLIP, components.AllocSeparable)
	}
	if d.VLs > 1 && d.ISLIPIterations > 1 {
		return fmt.Errorf("switch.islip_iterations: %d is not supported by the RTL with switch.vls %d, whose allocator runs one iSLIP iteration over a request per input VL (1; any with one VL)",
			d.ISLIPIterations, d.VLs)
	}
	if !ib.ValidMTU(d.MTU) {
		return fmt.Errorf("link.mtu: %d is not an IB MTU (256, 512, 1024, 2048, 4096)", d.MTU)
	}
	gen := strings.ToLower(d.LinkGeneration)
	known := false
	for _, g := range generations {
		known = known || g == gen
	}
	if !known {
		return fmt.Errorf("link.generation: %q is not an IB generation (%s)", d.LinkGeneration, strings.Join(generations, ", "))
	}
	switch d.LinkWidth {
	case 1, 4, 8, 12:
	case 2:
		if gen != "hdr" && gen != "ndr" && gen != "xdr" {
			return fmt.Errorf("link.width: 2x exists only from HDR on, not with %s (1x, 4x, 8x, 12x)", d.LinkGeneration)
		}
	default:
		return fmt.Errorf("link.width: %dx is not an IB link width (1x, 2x, 4x, 8x, 12x)", d.LinkWidth)
	}
	if d.WQEPrefetchDepth < 0 || d.WQEPrefetchDepth > maxWQEPrefetch {
		return fmt.Errorf("hca.wqe_prefetch_depth: %d is outside 1..%d", d.WQEPrefetchDepth, maxWQEPrefetch)
	}
	for _, c := range []struct {
		key string
		v   int
	}{{"hca.retry_cnt", d.RetryCnt}, {"hca.rnr_retry", d.RNRRetry}} {
		if c.v < 0 || c.v > 7 {
			return fmt.Errorf("%s: %d is not a retry count hca_requester's 3-bit counter holds (0..7, 7 infinite)", c.key, c.v)
		}
	}
	if d.RetryTimeout < 0 || d.RetryTimeout > 31 {
		return fmt.Errorf("hca.retry_timeout: %d is not a local ACK timeout exponent (0..31: 4.096 us x 2^t, 0 none)", d.RetryTimeout)
	}
	if d.AckCoalesce < 0 || d.AckCoalesce > 1024 {
		return fmt.Errorf("hca.ack_coalesce: %d is not a count hca_responder's 11-bit coalescing counter holds (1..1024)", d.AckCoalesce)
	}
	if d.MaxInline < 0 || d.MaxInline > hca.MaxInlineLimit {
		return fmt.Errorf("hca.max_inline_bytes: %d is not an inline size a send WQE holds (0..%d)", d.MaxInline, hca.MaxInlineLimit)
	}
	if d.MaxRdAtomic < 0 || d.MaxRdAtomic > 255 {
		return fmt.Errorf("hca.max_rd_atomic: %d is not a responder resource count (1..255)", d.MaxRdAtomic)
	}
	if d.KeyCacheEntries < 0 || d.KeyCacheEntries > maxKeyCache {
		return fmt.Errorf("hca.key_cache_entries: %d is more than the RTL's MPT cache builds (1..%d: fully associative, least recently used out, as the model's)", d.KeyCacheEntries, maxKeyCache)
	}
	if m := d.PCIeMRRSBytes; m != 0 && (m < 128 || m > 4096 || m&(m-1) != 0) {
		return fmt.Errorf("hca.pcie.mrrs_bytes: %d is not 128, 256, 512, 1024, 2048 or 4096", m)
	}
	if m := d.PCIeMPSBytes; m != 0 && (m < 128 || m > 4096 || m&(m-1) != 0) {
		return fmt.Errorf("hca.pcie.mps_bytes: %d is not 128, 256, 512, 1024, 2048 or 4096", m)
	}
	if n := d.PCIeOutstandingReads; n < 0 || n > maxReadTags {
		return fmt.Errorf("hca.pcie.outstanding_reads: %d is outside 1..%d, the tags the RTL's DMA engine numbers (8-bit tags, or PCIe's 10-bit tags 256..1023)", n, maxReadTags)
	}
	if err := d.validateSL2VL(); err != nil {
		return err
	}
	for _, c := range []struct {
		key string
		mhz float64
	}{{"switch.core_clock_mhz", d.SwitchClockMHz}, {"hca.core_clock_mhz", d.HCAClockMHz}} {
		if !(c.mhz == 0 || c.mhz >= 1 && c.mhz <= 10000) {
			return fmt.Errorf("%s: %v is outside 1..10000", c.key, c.mhz)
		}
	}
	if !(d.FCRefreshNs == 0 || d.FCRefreshNs >= 10 && d.FCRefreshNs <= 1e9) {
		return fmt.Errorf("link.fc_refresh_ns: %v is outside 10..1e9", d.FCRefreshNs)
	}
	if !(d.FCMinIntervalNs >= 0 && d.FCMinIntervalNs <= d.fcRefreshNs()) {
		return fmt.Errorf("link.fc_min_interval_ns: %v is outside 0..fc_refresh_ns (%v)", d.FCMinIntervalNs, d.fcRefreshNs())
	}
	for _, c := range []struct {
		key string
		mhz float64
	}{{"switch.core_clock_mhz", d.SwitchClockMHz}, {"hca.core_clock_mhz", d.HCAClockMHz}} {
		if r, _ := d.fcCycles(c.mhz); r > maxFCCycles {
			return fmt.Errorf("link.fc_refresh_ns: %v is %d cycles of %s %v, more than the RTL's %d-cycle refresh counter counts (a Verilog integer parameter)",
				d.fcRefreshNs(), r, c.key, clockOr1000(c.mhz), maxFCCycles)
		}
	}
	minBytes := ib.Credits(MaxPacketBytes(d.MTU)) * ib.CreditBytes
	for _, b := range []struct {
		key   string
		bytes int
	}{{"switch.vl_buffer_bytes", d.VLBufferBytes}, {"hca.vl_buffer_bytes", d.HCAVLBufferBytes}} {
		if b.bytes%ib.CreditBytes != 0 {
			return fmt.Errorf("%s: %d is not a multiple of 64 (one credit block)", b.key, b.bytes)
		}
		if b.bytes < minBytes || b.bytes > maxBufferBlocks*ib.CreditBytes {
			return fmt.Errorf("%s: %d is outside %d..%d (one largest packet at MTU %d, up to the 2048-block credit window)",
				b.key, b.bytes, minBytes, maxBufferBlocks*ib.CreditBytes, d.MTU)
		}
	}
	return nil
}

// Params derives the Verilog parameters. It panics on a design that
// Validate rejects.
func (d Design) Params() Params {
	if err := d.Validate(); err != nil {
		panic("rtl.Design.Params: " + err.Error())
	}
	p := Params{
		Ports:       d.Radix,
		PortW:       idxWidth(d.Radix),
		VLs:         d.VLs,
		VLW:         idxWidth(d.VLs),
		DataW:       BlockBytes * 8,
		BufDepth:    d.VLBufferBytes / BlockBytes,
		HCABufDepth: d.HCAVLBufferBytes / BlockBytes,
		Lanes:       d.LinkWidth,
		LaneW:       LaneBits,
		// A port with one data VL has nothing to arbitrate (OpenSM skips
		// VLArb then, ib-facts.md §3); keep one entry so the ports exist.
		VLArbEntries: components.MaxVLArbEntries,
		MaxPktBlocks: ib.Credits(MaxPacketBytes(d.MTU)),
		LFTTop:       lftTop,
		CQNW:         cqnW,
		QPNW:         qpnW,
		WQEPrefetch:  d.WQEPrefetchDepth,
		MTU:          d.MTU,
		Generation:   strings.ToLower(d.LinkGeneration),
	}
	if d.VLs == 1 {
		p.VLArbEntries = 1
	}
	if p.WQEPrefetch == 0 {
		p.WQEPrefetch = hca.Defaults().WQEPrefetchDepth
	}
	p.KeyCache = d.KeyCacheEntries
	if p.KeyCache == 0 {
		p.KeyCache = hca.Defaults().KeyCacheEntries
	}
	p.MRRS, p.ReadTags = d.PCIeMRRSBytes, d.PCIeOutstandingReads
	if p.MRRS == 0 {
		p.MRRS = hca.Defaults().PCIe.MRRSBytes
	}
	if p.ReadTags == 0 {
		p.ReadTags = hca.Defaults().PCIe.OutstandingReads
	}
	p.MPS = d.PCIeMPSBytes
	if p.MPS == 0 {
		p.MPS = hca.Defaults().PCIe.MPSBytes
	}
	p.TagW = 8
	if p.ReadTags > 256 {
		p.TagW = 10
	}
	p.ROBBlocks = robBlocks(p.ReadTags, p.MRRS)
	// A switch port may face an HCA or a switch, an HCA a switch or (back to
	// back) another HCA, and the RTL does not know which: only the smaller
	// buffer is sure not to overflow before the peer's first flow-control
	// packet, sent right after reset, gives the real limit.
	p.PeerDepth = min(p.BufDepth, p.HCABufDepth)
	p.SwFCRefreshCycles, p.SwFCMinCycles = d.fcCycles(d.SwitchClockMHz)
	p.HCAFCRefreshCycles, p.HCAFCMinCycles = d.fcCycles(d.HCAClockMHz)
	p.RetryCnt, p.RNRRetry = d.RetryCnt, d.RNRRetry
	p.RNRTick = rnrTick(d.HCAClockMHz)
	p.RetryTimeout, p.ACKTick = d.RetryTimeout, ackTick(d.HCAClockMHz)
	p.PKeyN = PKeyTableEntries
	p.MaxRSGE = hca.MaxRecvSGE
	p.AckCoalesce = max(d.AckCoalesce, 1)
	p.MaxInline = d.MaxInline
	p.RdRes = d.MaxRdAtomic
	if p.RdRes == 0 {
		p.RdRes = 16
	}
	p.BufAddrW = idxWidth(p.BufDepth)
	p.HCABufAddrW = idxWidth(p.HCABufDepth)
	return p
}

// robBlocks is the size of each of hca_dma_engine's two reorder rings in
// 64-byte blocks, its ROB_BLOCKS: every tag's largest request (tags ×
// MRRS/64), rounded up to a power of two, and at least two requests' worth.
func robBlocks(tags, mrrs int) int {
	cb := mrrs / BlockBytes
	aw := max(idxWidth(tags*cb), cntWidth(cb))
	return 1 << aw
}

// dmaLapSlots is the ring slots one word of hca_dma_engine's lap bits
// holds (its LAP_W): 64, or the whole ring when it is smaller.
func dmaLapSlots(rob int) int { return min(rob, 64) }

// dmaClearCycles is the length of hca_dma_engine's clear after reset for
// rings of rob blocks: it writes one word of lap bits a cycle (both rings
// at once), and takes no request until it is done.
func dmaClearCycles(rob int) int { return rob / dmaLapSlots(rob) }

// dmaTagEntryBits is the width of an entry of hca_dma_engine's tag table
// (its TE_W): the client 1, the next beat's ring count (slot and lap bit:
// log2(rob) + 1) and the beats still to come (a count 0..MRRS/64).
func dmaTagEntryBits(rob, mrrs int) int {
	return 1 + idxWidth(rob) + 1 + cntWidth(mrrs/BlockBytes)
}

// maxFCCycles is the largest FC_REFRESH_CYCLES: a Verilog integer
// parameter is 32-bit signed.
const maxFCCycles = 1<<31 - 1

func (d Design) fcRefreshNs() float64 {
	if d.FCRefreshNs == 0 {
		return link.Defaults().FCRefreshNs
	}
	return d.FCRefreshNs
}

// rnrTick is 10 us (hca.RNRTimerPS(1), the RNR timer's unit) in cycles
// of a clock of mhz (0: 1000), rounded to the nearest cycle: 10000 at
// 1 GHz.
func rnrTick(mhz float64) int { return cyclesIn(hca.RNRTimerPS(1), mhz) }

// ackTick returns the HCA core cycles in 4.096 us (the local ACK
// timeout's unit, hca.RetryTimeoutPS(1) / 2) at mhz (0: 1000), rounded to
// the nearest cycle as rnrTick rounds.
func ackTick(mhz float64) int { return cyclesIn(hca.RetryTimeoutPS(1)/2, mhz) }

// cyclesIn is span in cycles of a clock of mhz (0: 1000), rounded to the
// nearest cycle.
func cyclesIn(span ib.PS, mhz float64) int {
	cyc := int64(ib.CyclePS(clockOr1000(mhz)))
	return int((int64(span) + cyc/2) / cyc)
}

func clockOr1000(mhz float64) float64 {
	if mhz == 0 {
		return 1000
	}
	return mhz
}

// fcCycles returns the flow-control refresh period and minimum interval
// in cycles of a clock of mhz (0: 1000): the refresh rounded down, at
// least 1, so a VL is refreshed at least as often as link.fc_refresh_ns
// asks; the interval rounded up, so it is never shorter than
// link.fc_min_interval_ns. Times are in whole picoseconds first, as the
// simulator keeps them (link.Config.FCRefresh, ib.CyclePS).
func (d Design) fcCycles(mhz float64) (refresh, minGap int) {
	cyc := int64(ib.CyclePS(clockOr1000(mhz)))
	r := int64(ib.FromNanoseconds(d.fcRefreshNs()))
	m := int64(ib.FromNanoseconds(d.FCMinIntervalNs))
	return int(max(r/cyc, 1)), int((m + cyc - 1) / cyc)
}
