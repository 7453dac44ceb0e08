package hca

import (
	"fmt"
	"sort"
	"strings"
)

// StageConfig is the timing of one clocked pipeline stage, in HCA core cycles.
type StageConfig struct {
	// LatencyCycles is the core cycles from accepting an item to handing it on.
	LatencyCycles int `yaml:"latency_cycles"`
	// IntervalCycles is the core cycles between two accepts (initiation
	// interval); 1 means fully pipelined, one item per cycle.
	IntervalCycles int `yaml:"interval_cycles"`
}

// PCIeConfig is the host link between the HCA and the root complex.
type PCIeConfig struct {
	// Gen is the PCIe generation, 3..6.
	Gen int `yaml:"gen"`
	// Lanes is the link width: 1, 2, 4, 8 or 16.
	Lanes int `yaml:"lanes"`
	// MPSBytes is the max payload size of one TLP (posted writes, completions).
	MPSBytes int `yaml:"mps_bytes"`
	// MRRSBytes is the max read request size: one read request asks for at most this.
	MRRSBytes int `yaml:"mrrs_bytes"`
	// ReadCompletionBytes is the payload of one read completion TLP: the root
	// complex splits a read at this boundary (RCB); at most MPSBytes.
	ReadCompletionBytes int `yaml:"read_completion_bytes"`
	// ReadLatencyNS is the host's read completion latency: from the read
	// request TLP arriving at the root complex to its first completion leaving it, ns.
	ReadLatencyNS float64 `yaml:"read_completion_latency_ns"`
	// WriteLatencyNS is the time from a posted write TLP's tail leaving the
	// HCA to its data being visible to a polling CPU, ns.
	WriteLatencyNS float64 `yaml:"posted_write_latency_ns"`
	// TLPOverheadBytes is the bytes of a memory write or read request TLP
	// that are not payload: framing, sequence number, 4DW header, LCRC (a
	// read request is only this).
	TLPOverheadBytes int `yaml:"tlp_overhead_bytes"`
	// CompletionOverheadBytes is the same for a read completion (3DW header).
	CompletionOverheadBytes int `yaml:"completion_overhead_bytes"`
	// OutstandingReads is the number of read requests (tags) the HCA may
	// have in flight at once.
	OutstandingReads int `yaml:"outstanding_reads"`
	// MMIOLatencyNS is the time from the CPU's doorbell / BlueFlame store to
	// the HCA seeing it (write-combining flush and the downstream TLP), ns.
	MMIOLatencyNS float64 `yaml:"mmio_latency_ns"`
	// PostedWriteQueueBytes is how many bytes of posted-write TLPs (payload
	// and TLP overhead) the HCA holds between its receive buffer and PCIe: a
	// received packet's data leaves the IB receive buffer, and its credits
	// go back, once its TLPs fit in this queue (receive). 0: no queue, the
	// buffer holds a packet until its last TLP has left.
	PostedWriteQueueBytes int `yaml:"posted_write_queue_bytes"`
}

// HostConfig is the application's CPU cost around the verbs calls.
type HostConfig struct {
	// PostNS is the CPU time of one ibv_post_send / post_recv before the
	// doorbell store, ns.
	PostNS float64 `yaml:"post_ns"`
	// PollNS is the CPU time from a CQE becoming visible in memory to the
	// application acting on it (poll loop iteration and ibv_poll_cq), ns.
	PollNS float64 `yaml:"poll_ns"`
	// InterruptToWakeupNS is the time from an MSI-X message reaching the
	// host to the thread asleep in ibv_get_cq_event running again: the
	// interrupt's delivery and handler, the event queued on the channel,
	// the wake-up and the return to user space, ns (completion events,
	// cqevent.go; used only by CQs armed on a channel).
	InterruptToWakeupNS float64 `yaml:"interrupt_to_wakeup_ns"`
}

// Config is every knob of one HCA and its host. The YAML section is `hca:`.
type Config struct {
	// Profile names the host profile the other keys start from (cx5, cx6,
	// cx7, cx8 or their long names); keys given beside it override it.
	Profile string `yaml:"profile"`
	// CoreClockMHz is the HCA core clock; every stage latency counts its cycles.
	CoreClockMHz float64 `yaml:"core_clock_mhz"`

	Doorbell    StageConfig `yaml:"doorbell"`     // doorbell decode + round-robin QP scheduler
	WQEFetch    StageConfig `yaml:"wqe_fetch"`    // WQE parse after its DMA read (per WQE)
	KeyCheck    StageConfig `yaml:"key_check"`    // one L_Key / R_Key check on a cache hit
	DMA         StageConfig `yaml:"dma"`          // DMA engine issue (per packet-sized request)
	TransportTx StageConfig `yaml:"transport_tx"` // requester / response packet build (per packet)
	TransportRx StageConfig `yaml:"transport_rx"` // packet parse + responder / completer (per packet)
	CQE         StageConfig `yaml:"cqe"`          // CQE build (per CQE)

	// WQEPrefetchDepth is how many WQEBBs the fetch unit reads ahead per QP.
	WQEPrefetchDepth int `yaml:"wqe_prefetch_depth"`
	// BlueFlameBytes is the largest WQE the CPU may write through the
	// BlueFlame register with the doorbell (no WQE fetch); 0 disables it.
	BlueFlameBytes int `yaml:"blueflame_bytes"`
	// PreferBlueFlame makes a post of one WR write its WQE through BlueFlame
	// even when it is not inline (libmlx5's MLX5_POST_SEND_PREFER_BF, on
	// unless the environment sets it to 0); false leaves BlueFlame to
	// inline WQEs only, and the HCA fetches every other WQE.
	PreferBlueFlame bool `yaml:"prefer_blueflame"`
	// KeyCacheEntries is the translation cache size in memory keys.
	KeyCacheEntries int `yaml:"key_cache_entries"`
	// KeyMissExtraNS is on-chip time a key-cache miss adds on top of the
	// PCIe read of the key's MKey context (which is modelled: keyCheck), ns.
	KeyMissExtraNS float64 `yaml:"key_miss_extra_ns"`
	// MTTCacheEntries is the address-translation cache size in pages: the
	// MTT entries (one per page of a registered region) the HCA holds on
	// chip. 0: translations are not modelled (every one on chip).
	MTTCacheEntries int `yaml:"mtt_cache_entries"`
	// MTTPageBytes is the page size an MTT entry translates.
	MTTPageBytes int `yaml:"mtt_page_bytes"`
	// QPCacheEntries is the QP context cache size in QPs: the QP contexts
	// the HCA holds on chip (qpcache.go). 0: QP contexts are not modelled
	// (every one on chip).
	QPCacheEntries int `yaml:"qp_cache_entries"`
	// QPContextBytes is the size of one QP context in ICM, what a QP
	// context cache miss reads from host memory, bytes.
	QPContextBytes int `yaml:"qp_context_bytes"`
	// CQCacheEntries is the CQ context cache size in CQs: the CQ contexts
	// the HCA holds on chip (ctxcache.go). 0: CQ contexts are not modelled
	// (every one on chip).
	CQCacheEntries int `yaml:"cq_cache_entries"`
	// CQContextBytes is the size of one CQ context in ICM, what a CQ
	// context cache miss reads from host memory and an eviction writes
	// back, bytes.
	CQContextBytes int `yaml:"cq_context_bytes"`
	// SRQCacheEntries is the SRQ context cache size in SRQs (ctxcache.go).
	// 0: SRQ contexts are not modelled (every one on chip).
	SRQCacheEntries int `yaml:"srq_cache_entries"`
	// SRQContextBytes is the size of one SRQ context in ICM, what an SRQ
	// context cache miss reads and an eviction writes back, bytes.
	SRQContextBytes int `yaml:"srq_context_bytes"`
	// EQCacheEntries is the EQ context cache size in EQs (ctxcache.go): the
	// event queues' contexts the HCA holds on chip, used at each EQE. 0:
	// EQ contexts are not modelled (every one on chip).
	EQCacheEntries int `yaml:"eq_cache_entries"`
	// EQContextBytes is the size of one EQ context in ICM, what an EQ
	// context cache miss reads and an eviction writes back, bytes.
	EQContextBytes int `yaml:"eq_context_bytes"`
	// KeyCacheMissNS is the retired fixed miss time. It is kept only so that
	// a config still giving it is refused with a line saying what replaced
	// it (Validate) instead of "unknown key"; nil when not given.
	KeyCacheMissNS *float64 `yaml:"key_cache_miss_ns,omitempty"`

	// AckReqEvery makes the requester set AckReq on every Nth packet of a
	// long message (and always on a message's last packet).
	AckReqEvery int `yaml:"ack_req_every"`
	// AckCoalesce is the most AckReq packets one ACK may cover; 1 = an ACK
	// per AckReq packet.
	AckCoalesce int `yaml:"ack_coalesce"`
	// RetryTimeout is the 5-bit local ACK timeout exponent: 4.096 µs × 2^t.
	RetryTimeout int `yaml:"retry_timeout"`
	// RetryCnt is the transport retry count, 0..7.
	RetryCnt int `yaml:"retry_cnt"`
	// RNRRetry is the RNR retry count, 0..7 (7 = infinite).
	RNRRetry int `yaml:"rnr_retry"`
	// MinRNRTimer is the responder's 5-bit RNR timer code sent in RNR NAKs.
	MinRNRTimer int `yaml:"min_rnr_timer"`
	// MaxRdAtomic caps outstanding RDMA READ + atomic requests per QP.
	MaxRdAtomic int `yaml:"max_rd_atomic"`
	// MaxInlineBytes is the largest inline payload a send WQE may carry.
	MaxInlineBytes int `yaml:"max_inline_bytes"`
	// TxBufferBytes is the on-chip transmit buffer: wire bytes of request
	// packets granted by the scheduler and not yet on the wire.
	TxBufferBytes int `yaml:"tx_buffer_bytes"`
	// CQDepth is the CQEs a completion queue holds.
	CQDepth int `yaml:"cq_depth"`
	// VLBufferBytes is a host port's receive buffer per VL (its credits × 64).
	VLBufferBytes int `yaml:"vl_buffer_bytes"`

	PCIe PCIeConfig `yaml:"pcie"`
	Host HostConfig `yaml:"host"`
}

// Defaults returns the ConnectX-5 class EDR host on PCIe Gen3 x16 (profile
// cx5). Each value says its unit and source; "assumed" marks a design guess
// with no public number, "calibrated" a knob fitted to the EDR reference
// (docs/validation.md).
func Defaults() Config {
	return Config{
		Profile: "cx5",
		// MHz; assumed: ConnectX core clocks are not published.
		CoreClockMHz: 1000,

		// cycles; assumed. Doorbell decode + scheduler pick.
		Doorbell: StageConfig{LatencyCycles: 20, IntervalCycles: 2},
		// cycles; assumed. Parse one 64-B WQEBB after its DMA read.
		WQEFetch: StageConfig{LatencyCycles: 10, IntervalCycles: 2},
		// cycles; assumed. One MPT lookup on a cache hit.
		KeyCheck: StageConfig{LatencyCycles: 10, IntervalCycles: 1},
		// cycles; assumed. DMA descriptor issue per request.
		DMA: StageConfig{LatencyCycles: 10, IntervalCycles: 2},
		// cycles; assumed. Header build per packet; interval 4 cycles = 250 Mpps
		// ceiling at 1 GHz, above the 215 M msg/s ConnectX-6 figure (ib-facts §8).
		TransportTx: StageConfig{LatencyCycles: 40, IntervalCycles: 4},
		// cycles; assumed. Parse + PSN check per packet, same ceiling.
		TransportRx: StageConfig{LatencyCycles: 40, IntervalCycles: 4},
		// cycles; assumed. CQE build.
		CQE: StageConfig{LatencyCycles: 10, IntervalCycles: 2},

		// WQEBBs; assumed.
		WQEPrefetchDepth: 8,
		// bytes; mlx5 BlueFlame half-register, bf_reg_size 512 / 2 (ib-facts §7, unconfirmed).
		BlueFlameBytes: 256,
		// rdma-core providers/mlx5/mlx5.c get_always_bf(): prefer_bf is 1
		// unless MLX5_POST_SEND_PREFER_BF=0, and post_send_db() then copies a
		// single WR's WQE to the BlueFlame register when `inl ||
		// ctx->prefer_bf` (qp.c): perftest's non-inline posts go by BlueFlame.
		PreferBlueFlame: true,
		// keys; assumed.
		KeyCacheEntries: 256,
		// ns; assumed: a miss costs its MKey-context read and nothing more.
		KeyMissExtraNS: 0,
		// pages; 0 = address translation not modelled, so results stand as
		// validated (docs/validation.md). ConnectX's MTT cache size is not
		// published; set it to study translation misses.
		MTTCacheEntries: 0,
		// bytes; the kernel's page size, which mlx5 uses for memory
		// backed by small pages (mlx5_umem_find_best_pgsz picks the
		// largest size the pages allow: 2 MiB with huge pages).
		MTTPageBytes: 4096,
		// QPs; 0 = QP contexts not modelled, so results stand as validated.
		// ConnectX's QP context cache size is not published; set it to
		// study many active QPs (docs/hca.md, "QP context cache").
		QPCacheEntries: 0,
		// bytes; the mlx5 PRM's QP context, struct mlx5_ifc_qpc_bits in
		// Linux include/linux/mlx5/mlx5_ifc.h, is 0x740 bits (232 bytes),
		// held in an ICM entry of a power of two: 256, the QPC entry size
		// the InfiniHost/Tavor PRM gives (QUERY_DEV_CAP qpc_entry_sz);
		// mlx5's ICM layout is the firmware's and not published.
		QPContextBytes: 256,
		// CQs and SRQs; 0 = not modelled, so results stand as validated.
		// ConnectX's cache sizes for them are not published
		// (docs/hca.md, "CQ and SRQ context caches").
		CQCacheEntries:  0,
		SRQCacheEntries: 0,
		// bytes; the mlx5 PRM's CQ context, struct mlx5_ifc_cqc_bits in
		// Linux include/linux/mlx5/mlx5_ifc.h, ends with dbr_addr at bit
		// 0x1c0: 0x200 bits, 64 bytes, a power of two already; that the
		// ICM entry is that size too is assumed (mlx5's ICM layout is the
		// firmware's and not published).
		CQContextBytes: 64,
		// bytes; the SRQ context, struct mlx5_ifc_srqc_bits there, ends
		// with reserved_at_180[0x80]: 0x200 bits, 64 bytes; the ICM entry
		// the same size, assumed.
		SRQContextBytes: 64,
		// EQs, opt-in as the others (docs/hca.md, "CQ and SRQ context
		// caches"). bytes; the EQ context, struct mlx5_ifc_eqc_bits
		// there, ends with reserved_at_180[0x80]: 0x200 bits, 64 bytes;
		// the ICM entry the same size, assumed.
		EQCacheEntries: 0,
		EQContextBytes: 64,

		// packets; rxe RXE_MAX_PKT_PER_ACK 64 (ib-facts §5).
		AckReqEvery: 64,
		// AckReq packets per ACK; 1 = no coalescing (rxe acks each AckReq, ib-facts §5).
		AckCoalesce: 1,
		// exponent; perftest DEF_QP_TIME 14 → 4.096 µs × 2^14 ≈ 67 ms.
		RetryTimeout: 14,
		// perftest DEF_RETRY_COUNT 7.
		RetryCnt: 7,
		// perftest sets rnr_retry 7 (infinite).
		RNRRetry: 7,
		// code 12 = 0.64 ms (ib-facts §5 RNR table); perftest's min_rnr_timer.
		MinRNRTimer: 12,
		// Mellanox HCAs: 16 (perftest MAX_OUT_READ_HERMON, ib-facts §5).
		MaxRdAtomic: 16,
		// bytes; perftest DEF_INLINE_SEND_RC_UC 236.
		MaxInlineBytes: 236,
		// bytes; assumed: covers the PCIe read round trip at link rate
		// (12.5 GB/s × 0.6 µs ≈ 7.5 KB at EDR; 50 GB/s × 0.6 µs = 30 KB at NDR).
		TxBufferBytes: 65536,
		// CQEs; assumed (perftest sizes its CQ to tx depth × QPs).
		CQDepth: 1024,
		// bytes per VL; assumed 32 KiB (512 credits).
		VLBufferBytes: 32768,

		PCIe: PCIeConfig{
			// ConnectX-4 VPI: "PCIe Gen 3.0 … through an x16 edge connector up
			// to 8GT/s" (Mellanox user manual, manualshive.com copy); ConnectX-5:
			// Gen 3.0/4.0 x16 (docs.nvidia.com/networking/display/connectx5ib/
			// interfaces), Gen4 on the Ex cards. Gen3 x16 carries 126 Gb/s
			// (ib-facts §8), above EDR 4x's 100.
			Gen: 3, Lanes: 16,
			MPSBytes:            256, // bytes; common x86 root-port setting, assumed
			MRRSBytes:           512, // bytes; Linux default MRRS, assumed
			ReadCompletionBytes: 64,  // bytes; RCB 64 B, root complexes return cache lines, assumed
			// ns; measured: pcie-bench (Neugebauer et al., SIGCOMM 2018),
			// data repository github.com/pcie-bench/data, directory
			// nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0,
			// lat_dma_sizes.txt: LAT_DMA_RD of 64 B, warm cache, median 656
			// cycles of the NFP-6000's 1.2 GHz clock = 546.67 ns, from the
			// device issuing the read to the data being in. That device is
			// PCIe Gen3 x8, so the window holds the 24-byte request and the
			// 64 + 20-byte completion at x8 (3.05 + 10.66 ns); this knob is
			// the rest: 546.67 − 13.71 = 532.96 → 533 ns
			// (TestReadLatencyFromPCIeBench). Cold cache: 600 ns median.
			// Another host and device than the ConnectX-4's of
			// docs/validation.md, the nearest published measurement.
			ReadLatencyNS:  533,
			WriteLatencyNS: 200, // ns; assumed: posted write to memory, under half a read round trip
			// bytes; Gen3 framing: STP token 4 (carries the sequence number)
			// + 4DW header 16 + LCRC 4 (ib-facts §8 says 20–30 B, unsourced).
			TLPOverheadBytes: 24,
			// bytes; STP 4 + 3DW completion header 12 + LCRC 4.
			CompletionOverheadBytes: 20,
			OutstandingReads:        64, // tags; assumed
			// ns; calibrated (the only calibrated knob): with every other term
			// fixed, ib_send_lat 32 B EDR back to back gives 0.8204 µs median,
			// reference ≈ 0.82 µs (docs/validation.md).
			MMIOLatencyNS: 308,
			// bytes; assumed (ConnectX's internal buffering is not
			// published): four 4 KiB packets, so while PCIe takes writes
			// faster than the link brings them (every profile at its own
			// port's rate) the queue never fills and credits go back at the
			// end of transport-rx.
			PostedWriteQueueBytes: 16384,
		},
		Host: HostConfig{
			PostNS: 60, // ns; assumed: build a WQE + store, a few hundred instructions
			PollNS: 40, // ns; assumed: one poll-loop iteration that finds the CQE
			// ns; an estimate (docs/hca.md, "Completion events"): Linux
			// interrupt to user-space wake-up on a Xeon, a few µs.
			InterruptToWakeupNS: 5000,
		},
	}
}

// profiles maps a profile name to the function building it.
var profiles = map[string]func() Config{
	"cx5":     Defaults,
	"cx5-edr": Defaults,
	"cx6":     cx6,
	"cx6-hdr": cx6,
	"cx7":     cx7,
	"cx7-ndr": cx7,
	"cx8":     cx8,
	"cx8-xdr": cx8,
}

// cx6 is a ConnectX-6 class HDR host on PCIe Gen4 x16: a ConnectX-6 x16
// card carries "up to 100GbE in a PCIe Gen 3.0/4.0 slot, or up to 200GbE in
// a PCIe Gen 4.0 slot" (docs.nvidia.com/networking/display/ConnectX6EN/
// Introduction; the VPI cards list Gen 3.0/4.0 x16 the same way).
func cx6() Config {
	c := Defaults()
	c.Profile = "cx6"
	c.PCIe.Gen = 4
	c.PCIe.OutstandingReads = 128 // tags; assumed, doubled with the link rate
	return c
}

// cx7 is a ConnectX-7 class NDR host on PCIe Gen5 x16 ("PCIe Gen 5.0 x16
// host connectivity", docs.nvidia.com/networking/display/ConnectX7VPIOCP3/
// Introduction). Its other values are assumed, none published.
func cx7() Config {
	c := Defaults()
	c.Profile = "cx7"
	c.PCIe.Gen = 5
	c.PCIe.OutstandingReads = 256    // tags; assumed (8-bit extended tags)
	c.PCIe.MPSBytes = 512            // bytes; assumed for newer root ports
	c.PCIe.ReadCompletionBytes = 128 // bytes; assumed (RCB 128 root ports)
	c.CoreClockMHz = 1500            // MHz; assumed
	return c
}

// cx8 is a ConnectX-8 class XDR host on PCIe Gen6 x16 ("PCI Express Gen6
// (5.0 and 4.0 compatible) through an x16 edge connector",
// docs.nvidia.com/networking/display/connectx8supernic/supported-interfaces;
// the OCP 3.0 cards are Gen5 x16, which cannot carry 800 Gb/s).
func cx8() Config {
	c := cx7()
	c.Profile = "cx8"
	c.PCIe.Gen = 6
	c.PCIe.OutstandingReads = 512 // tags; assumed (10-bit tags, PCIe 4.0+)
	c.CoreClockMHz = 2000         // MHz; assumed
	// bytes; at 64 GT/s PCIe runs in Flit Mode: TLPs are packed into the
	// 236 TLP bytes of 256-byte flits whose DLP, CRC and FEC (already paid
	// in the 236/256 line rate) protect the link, so a TLP has no STP
	// token and no LCRC, only its header: 4DW for a 64-bit memory request
	// or write, 3DW for a completion.
	c.PCIe.TLPOverheadBytes = 16
	c.PCIe.CompletionOverheadBytes = 12
	return c
}

// ProfileNames returns the accepted profile names, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Profile returns the named host profile's configuration. A config loader
// reads hca.profile first, starts from Profile(name), then decodes the rest
// of the hca section over it.
func Profile(name string) (Config, error) {
	f, ok := profiles[strings.ToLower(name)]
	if !ok {
		return Config{}, fmt.Errorf("hca.profile: %q is not a profile (%s)", name, strings.Join(ProfileNames(), ", "))
	}
	return f(), nil
}

// Normalize rewrites a profile name given in another case (CX7, which
// Profile accepts) to the name listed (cx7), so that params show one form.
func (c *Config) Normalize() {
	if p := strings.ToLower(c.Profile); profiles[p] != nil {
		c.Profile = p
	}
}

// Validate checks every knob's range; errors name the dotted key.
func (c *Config) Validate() error {
	if c.Profile != "" {
		if _, ok := profiles[strings.ToLower(c.Profile)]; !ok {
			return fmt.Errorf("hca.profile: %q is not a profile (%s)", c.Profile, strings.Join(ProfileNames(), ", "))
		}
	}
	if !(c.CoreClockMHz >= 1 && c.CoreClockMHz <= 10000) {
		return fmt.Errorf("hca.core_clock_mhz: %v is out of range (1 to 10000)", c.CoreClockMHz)
	}
	stages := []struct {
		key string
		s   StageConfig
	}{
		{"doorbell", c.Doorbell}, {"wqe_fetch", c.WQEFetch}, {"key_check", c.KeyCheck},
		{"dma", c.DMA}, {"transport_tx", c.TransportTx}, {"transport_rx", c.TransportRx},
		{"cqe", c.CQE},
	}
	for _, st := range stages {
		if st.s.LatencyCycles < 0 || st.s.LatencyCycles > 1000000 {
			return fmt.Errorf("hca.%s.latency_cycles: %d is out of range (0 to 1000000)", st.key, st.s.LatencyCycles)
		}
		if st.s.IntervalCycles < 1 || st.s.IntervalCycles > 1000000 {
			return fmt.Errorf("hca.%s.interval_cycles: %d is out of range (1 to 1000000)", st.key, st.s.IntervalCycles)
		}
	}
	ints := []struct {
		key      string
		v        int
		min, max int
	}{
		{"wqe_prefetch_depth", c.WQEPrefetchDepth, 1, 256},
		{"blueflame_bytes", c.BlueFlameBytes, 0, 1024},
		{"key_cache_entries", c.KeyCacheEntries, 1, 1 << 20},
		{"mtt_cache_entries", c.MTTCacheEntries, 0, 1 << 20},
		{"qp_cache_entries", c.QPCacheEntries, 0, 1 << 20},
		{"cq_cache_entries", c.CQCacheEntries, 0, 1 << 20},
		{"srq_cache_entries", c.SRQCacheEntries, 0, 1 << 20},
		{"eq_cache_entries", c.EQCacheEntries, 0, 1 << 20},
		{"ack_req_every", c.AckReqEvery, 1, 1 << 16},
		{"ack_coalesce", c.AckCoalesce, 1, 1024},
		{"retry_timeout", c.RetryTimeout, 0, 31},
		{"retry_cnt", c.RetryCnt, 0, 7},
		{"rnr_retry", c.RNRRetry, 0, 7},
		{"min_rnr_timer", c.MinRNRTimer, 0, 31},
		{"max_rd_atomic", c.MaxRdAtomic, 1, 255},
		{"max_inline_bytes", c.MaxInlineBytes, 0, MaxInlineLimit},
		{"tx_buffer_bytes", c.TxBufferBytes, 4200, 1 << 24},
		{"cq_depth", c.CQDepth, 2, 1 << 22},
		{"vl_buffer_bytes", c.VLBufferBytes, 64, 1 << 24},
		{"pcie.lanes", c.PCIe.Lanes, 1, 16},
		{"pcie.tlp_overhead_bytes", c.PCIe.TLPOverheadBytes, 0, 256},
		{"pcie.completion_overhead_bytes", c.PCIe.CompletionOverheadBytes, 0, 256},
		{"pcie.outstanding_reads", c.PCIe.OutstandingReads, 1, 1024},
		{"pcie.posted_write_queue_bytes", c.PCIe.PostedWriteQueueBytes, 0, 1 << 24},
	}
	for _, iv := range ints {
		if iv.v < iv.min || iv.v > iv.max {
			return fmt.Errorf("hca.%s: %d is out of range (%d to %d)", iv.key, iv.v, iv.min, iv.max)
		}
	}
	if c.KeyCacheMissNS != nil {
		return fmt.Errorf("hca.key_cache_miss_ns: %v is no longer accepted: a key-cache miss is a PCIe read of the key's %d-byte MKey context, timed by hca.pcie.*; remove the key (hca.key_miss_extra_ns, default 0, adds on-chip time on top of the read)",
			*c.KeyCacheMissNS, MKeyContextBytes)
	}
	if !(c.KeyMissExtraNS >= 0 && c.KeyMissExtraNS <= 1e6) { // NaN fails too
		return fmt.Errorf("hca.key_miss_extra_ns: %v is out of range (0 to 1e6 ns)", c.KeyMissExtraNS)
	}
	if p := c.MTTPageBytes; p < 4096 || p > 1<<30 || p&(p-1) != 0 {
		return fmt.Errorf("hca.mtt_page_bytes: %d is not a power of two from 4096 to 1073741824 (4 KiB to 1 GiB)", p)
	}
	for _, cb := range [...]struct {
		kind  string
		bytes int
	}{{"qp", c.QPContextBytes}, {"cq", c.CQContextBytes}, {"srq", c.SRQContextBytes}, {"eq", c.EQContextBytes}} {
		if b := cb.bytes; b < 64 || b > 4096 || b&(b-1) != 0 {
			return fmt.Errorf("hca.%s_context_bytes: %d is not a power of two from 64 to 4096", cb.kind, b)
		}
	}
	if c.VLBufferBytes%64 != 0 {
		return fmt.Errorf("hca.vl_buffer_bytes: %d is not a multiple of 64 (one credit is 64 bytes)", c.VLBufferBytes)
	}
	if c.CQDepth&(c.CQDepth-1) != 0 {
		return fmt.Errorf("hca.cq_depth: %d is not a power of two", c.CQDepth)
	}
	if c.PCIe.Gen < 3 || c.PCIe.Gen > 6 {
		return fmt.Errorf("hca.pcie.gen: %d is not a modelled generation (3, 4, 5, 6)", c.PCIe.Gen)
	}
	switch c.PCIe.Lanes {
	case 1, 2, 4, 8, 16:
	default:
		return fmt.Errorf("hca.pcie.lanes: %d is not a width (1, 2, 4, 8, 16)", c.PCIe.Lanes)
	}
	pow2 := func(key string, v int) error {
		if v < 128 || v > 4096 || v&(v-1) != 0 {
			return fmt.Errorf("hca.pcie.%s: %d is not 128, 256, 512, 1024, 2048 or 4096", key, v)
		}
		return nil
	}
	if err := pow2("mps_bytes", c.PCIe.MPSBytes); err != nil {
		return err
	}
	if err := pow2("mrrs_bytes", c.PCIe.MRRSBytes); err != nil {
		return err
	}
	switch c.PCIe.ReadCompletionBytes {
	case 64, 128, 256, 512, 1024, 2048, 4096:
	default:
		return fmt.Errorf("hca.pcie.read_completion_bytes: %d is not a power of two from 64 to 4096", c.PCIe.ReadCompletionBytes)
	}
	if c.PCIe.ReadCompletionBytes > c.PCIe.MPSBytes {
		return fmt.Errorf("hca.pcie.read_completion_bytes: %d exceeds hca.pcie.mps_bytes %d", c.PCIe.ReadCompletionBytes, c.PCIe.MPSBytes)
	}
	floats := []struct {
		key string
		v   float64
	}{
		{"pcie.read_completion_latency_ns", c.PCIe.ReadLatencyNS},
		{"pcie.posted_write_latency_ns", c.PCIe.WriteLatencyNS},
		{"pcie.mmio_latency_ns", c.PCIe.MMIOLatencyNS},
		{"host.post_ns", c.Host.PostNS},
		{"host.poll_ns", c.Host.PollNS},
		{"host.interrupt_to_wakeup_ns", c.Host.InterruptToWakeupNS},
	}
	for _, f := range floats {
		if !(f.v >= 0 && f.v <= 1e9) {
			return fmt.Errorf("hca.%s: %v is out of range (0 to 1e9)", f.key, f.v)
		}
	}
	return nil
}
