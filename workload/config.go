package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/hca"
)

// Config is the `workload:` section.
type Config struct {
	// Kind selects the driver: stream (one link, back to back), perftest
	// (RDMA verbs tests on HCAs), or a synthetic pattern on packet
	// endpoints: uniform, permutation, shift, bitcomp, hotspot, incast;
	// collectives: allreduce, alltoall, allgather, reducescatter, broadcast,
	// reduce.
	Kind string `yaml:"kind"`
	// Size is the payload in bytes of each message (perftest, collectives)
	// or packet (stream and synthetic patterns).
	Size int `yaml:"size"`

	// Stream (back-to-back) knobs.
	Packets   int     `yaml:"packets"`    // packets to send; 0 with saturate = run for duration_ns
	Saturate  bool    `yaml:"saturate"`   // send back to back as fast as credits allow
	VL        int     `yaml:"vl"`         // virtual lane the stream uses
	SL        int     `yaml:"sl"`         // service level of the stream's, synthetic and HCA packets (perftest --sl, NCCL_IB_SL)
	DrainGbps float64 `yaml:"drain_gbps"` // receiver's buffer drain rate, Gb/s; 0 = unlimited
	Streams   int     `yaml:"streams"`    // parallel streams on VLs vl, vl+1, …; 1 = one VL

	// Phases (synthetic traffic and stream): statistics come from the
	// measurement window only.
	WarmupNs  float64 `yaml:"warmup_ns"`  // ns before measurement starts
	MeasureNs float64 `yaml:"measure_ns"` // ns of measurement (saturating stream: its duration)
	DrainNs   float64 `yaml:"drain_ns"`   // ns after measurement for packets in flight to land (the cap on the drain phase)

	// Perftest knobs (workload.kind: perftest).
	Test       string `yaml:"test"`       // write_lat, write_bw, read_lat, read_bw, send_lat, send_bw, atomic_lat
	Iterations int    `yaml:"iterations"` // messages per test (perftest -n)
	TxDepth    int    `yaml:"tx_depth"`   // outstanding sends per QP (perftest -t)
	QPs        int    `yaml:"qps"`        // queue pairs (perftest -q)
	// Background, with workload.kind perftest on a fabric of more than two
	// hosts, has every host but the two perftest hosts (the first and the
	// last) inject synthetic traffic among themselves by the synthetic knobs
	// (offered_load, injection, sizes, and the pattern named by
	// background_pattern) while the test runs.
	Background bool `yaml:"background"`
	// BackgroundSL is the service level of the background traffic; unset
	// (nil, the default) puts it on workload.sl, with the test. A pointer
	// so that a config without it has the effective config, and so the
	// trace header's config hash, it had before the key existed.
	BackgroundSL *int `yaml:"background_sl,omitempty"`
	// Connection is the perftest transport: RC (reliable connection) or UD
	// (unreliable datagram; send tests only).
	Connection string `yaml:"connection"`
	// SliceBytes cuts a collective's transfers into pipelined slices of at
	// most this many bytes (0: the default, NCCL's step size 512 KiB).
	SliceBytes int64 `yaml:"slice_bytes"`
	// Algorithm is the all-reduce's algorithm (AllReduceAlgorithms): ring
	// (empty, the default) or rabenseifner. omitempty, so a config without
	// it has the effective config, and so the trace header's config hash,
	// it had before the key existed.
	Algorithm string `yaml:"algorithm,omitempty"`
	// Root is a broadcast's source and a reduce's destination rank
	// (nccl-tests -r; 0 … hosts−1, the range checked when the fabric is
	// built). omitempty with the default 0, so a config without it keeps
	// its effective config and config hash.
	Root int `yaml:"root,omitempty"`
	// CollectiveIterations and CollectiveWarmup run a collective as
	// nccl-tests' loop does (-n and -w): CollectiveWarmup untimed
	// iterations, then CollectiveIterations timed ones, back to back on
	// the same QPs and buffers; the metrics are per timed iteration
	// (collective_iter.go). 0 is the default: one timed iteration, no
	// warm-up, the run as it was before the keys. omitempty, so a config
	// without them keeps its effective config and config hash.
	CollectiveIterations int `yaml:"collective_iterations,omitempty"`
	CollectiveWarmup     int `yaml:"collective_warmup,omitempty"`
	// Channels is the ring all-reduce's NCCL channels (NCCL_MIN_NCHANNELS
	// = NCCL_MAX_NCHANNELS): the vector cut into that many contiguous
	// parts, each reduced by a ring of its own on connections of its own
	// (RingAllReduceChannels). 0 is the default, one channel. omitempty,
	// so a config without it keeps its effective config and config hash.
	Channels int `yaml:"channels,omitempty"`
	// FlowControl is the collective's flow control (FlowControls): none
	// (empty, the default) or cts, NCCL's net IB clear-to-send, under
	// which a looped run goes back to back (collective_cts.go).
	// CollectiveAverage is nccl-tests' -a for such a run (AverageModes;
	// empty: avg). omitempty, so a config without them keeps its
	// effective config and config hash.
	FlowControl       string `yaml:"flow_control,omitempty"`
	CollectiveAverage string `yaml:"collective_average,omitempty"`
	// Protocol is NCCL's protocol for the ring and tree all-reduces
	// (Protocols): simple (empty, the default), ll or ll128, these with
	// flow_control cts (collective_proto.go). omitempty, so a config
	// without it keeps its effective config and config hash.
	Protocol string `yaml:"protocol,omitempty"`
	// SHARP (workload.algorithm: sharp): the window of outstanding
	// fragments (0: DefaultSharpOSTs), the fragment payload (0: link.mtu),
	// the aggregation nodes' ALU throughput in GB/s (0: as fast as its
	// inputs) and latency in ns. omitempty, so a config without them keeps
	// its effective config and config hash.
	SharpOSTs          int     `yaml:"sharp_osts,omitempty"`
	SharpFragmentBytes int     `yaml:"sharp_fragment_bytes,omitempty"`
	SharpALUGBps       float64 `yaml:"sharp_alu_gbps,omitempty"`
	SharpALUNs         float64 `yaml:"sharp_alu_ns,omitempty"`
	// ReduceGBps is the rate, in GB/s, at which a rank reduces received data
	// into its buffer during all-reduce (0: free, as a GPU is much faster
	// than an IB link).
	ReduceGBps        float64 `yaml:"reduce_gbps"`
	BackgroundPattern string  `yaml:"background_pattern"`
	InlineSize        int     `yaml:"inline_size"` // largest message sent inline (perftest -I); -1 = perftest's default (220 write_lat, 236 send_lat, else 0)
	// SGEs, for a perftest, cuts each message's local buffer into that
	// many scatter/gather elements (PerftestRun.SGEs), 1 … hca.MaxSendSGE;
	// nil is 1, the single element perftest posts. omitempty, so a config
	// without it keeps its effective config and config hash.
	SGEs *int `yaml:"sges,omitempty"`
	// UseSRQ, for send_bw and send_lat (perftest --use_srq), puts each
	// receiving host's QPs on one shared receive queue of rx_depth WQEs
	// (PerftestRun.UseSRQ). omitempty, so a config without it keeps its
	// effective config and config hash.
	UseSRQ bool `yaml:"use_srq,omitempty"`
	// RxDepth, for send_bw and send_lat, is perftest's -r: the receives
	// each QP keeps posted, or with UseSRQ the SRQ's max_wr, split among
	// the QPs (PerftestRun.RxDepth); 0 is perftest's 512 (DEF_RX_SEND).
	// omitempty, so a config without it keeps its effective config and
	// config hash.
	RxDepth int `yaml:"rx_depth,omitempty"`
	// UseEvent, for a perftest, is perftest's -e (--events): the measuring
	// loop sleeps on a completion channel instead of spinning on the CQ
	// (PerftestRun.UseEvent; docs/hca.md, "Completion events").
	// omitempty, so a config without it keeps its effective config and
	// config hash.
	UseEvent bool `yaml:"use_event,omitempty"`
	// CQModCount and CQModPeriodUS, for a perftest with UseEvent, set the
	// moderation of the CQs its loops sleep on (ibv_modify_cq's cq_count
	// and cq_period, µs; hca.Device.ModifyCQ; docs/hca.md, "CQ moderation
	// and resize"): an event per CQModCount completions, or CQModPeriodUS
	// after the first held one. Not perftest's --cq-mod, which is how often
	// a send is signaled. 0 and 0 (the default) is no moderation;
	// omitempty, so a config without them keeps its effective config and
	// config hash.
	CQModCount    int `yaml:"cq_moderation_count,omitempty"`
	CQModPeriodUS int `yaml:"cq_moderation_period_us,omitempty"`
	// Pattern, for a perftest, says which hosts run the test in pairs
	// (PerftestPatterns): one pair, the first host to the last (pair, or
	// empty, the default); an incast of Clients hosts into the last; a
	// shift or permutation among the first Clients hosts, each the client
	// of one pair and the server of another. omitempty with an empty
	// default, so a config without it has the effective config, and so the
	// trace header's config hash, it had before the key existed.
	Pattern string `yaml:"pattern,omitempty"`
	// Clients is the number of perftest clients of a Pattern other than
	// pair (0: every host the pattern can take).
	Clients int `yaml:"clients,omitempty"`
	// Mcg runs a perftest's send_bw or send_lat to a multicast group
	// (perftest -g, --mcg): host 0 sends over UD to the group's MLID, and
	// McgReceivers hosts, each with one UD QP attached, receive every
	// message. omitempty, as the keys added after the first configs, so a
	// config without it keeps its effective config and config hash.
	Mcg bool `yaml:"mcg,omitempty"`
	// McgReceivers is the number of receivers of a multicast perftest,
	// hosts 1 … McgReceivers (0: every host but the sender).
	McgReceivers int `yaml:"mcg_receivers,omitempty"`
	// TraceFile is the message trace a replay runs (workload.kind replay;
	// format in ParseTrace and docs/fabric.md), a path relative to the
	// config file's directory. omitempty with an empty default, so a
	// config without it keeps its effective config and config hash.
	TraceFile string `yaml:"trace_file,omitempty"`

	// Synthetic traffic knobs.
	OfferedLoad     float64 `yaml:"offered_load"`     // fraction of link rate each host injects, 0 < x ≤ 1
	Injection       string  `yaml:"injection"`        // bernoulli | onoff
	BurstPackets    float64 `yaml:"burst_packets"`    // on-off: mean packets per burst
	Sizes           string  `yaml:"sizes"`            // size distribution "256:0.5,4096:0.5"; empty = fixed Size
	HotspotFraction float64 `yaml:"hotspot_fraction"` // hotspot: share of packets to host 0
	Shift           int     `yaml:"shift"`            // shift pattern distance

	// Multicast traffic (workload.kind multicast; multicast.go): the
	// group's member hosts and the members that send, host lists such as
	// "0-7,12" (empty: every host; the group's first member). omitempty,
	// so a config without them keeps its effective config and config hash.
	Group   string `yaml:"group,omitempty"`
	Senders string `yaml:"senders,omitempty"`
	// Groups, instead of Group, runs several multicast groups at once, one
	// host list each ("0-7"); the k-th takes MLID 0xC000 + k. A host may be
	// in several groups (each copy is its group's, by its MLID). Senders
	// then names senders of any group, each in one group (empty: each
	// group's first member), or GroupSenders names them per group.
	// omitempty, so a config without it keeps its effective config and
	// config hash.
	Groups []string `yaml:"groups,omitempty"`
	// GroupSenders, beside Groups and instead of Senders, names each
	// group's senders, one host list per group in Groups' order (each a
	// subset of its group): how a host in several groups says which one it
	// sends to. A host sends to one group. omitempty for the config hash.
	GroupSenders []string `yaml:"group_senders,omitempty"`
	// GroupLoads and GroupSizes, beside Groups, give each group's senders
	// their offered load (fraction of the link) and payload bytes, one
	// entry per group in Groups' order; empty: OfferedLoad and Size for
	// every group. omitempty for the config hash.
	GroupLoads []float64 `yaml:"group_loads,omitempty"`
	GroupSizes []int     `yaml:"group_sizes,omitempty"`
	// BackgroundLoad is, with workload.kind multicast and Background, the
	// offered load of the background hosts' unicast traffic (OfferedLoad
	// is the multicast senders'); 0, the default, means OfferedLoad.
	// omitempty for the config hash.
	BackgroundLoad float64 `yaml:"background_load,omitempty"`
	// BackgroundHosts says, with workload.kind multicast and Background,
	// which hosts send the unicast background: "others" (empty, the
	// default: the hosts in no group) or "all" (the group members too,
	// beside their multicast). omitempty for the config hash.
	BackgroundHosts string `yaml:"background_hosts,omitempty"`
}

// Kinds lists every workload kind.
var Kinds = []string{"stream", "perftest", "uniform", "permutation", "shift", "bitcomp", "hotspot", "incast", "allreduce", "alltoall", "allgather", "reducescatter", "broadcast", "reduce", "replay", KindMulticast}

// Defaults returns the workload defaults: a saturating 4 KiB stream.
func Defaults() Config {
	return Config{
		Kind:              "stream",
		Size:              4096,
		Packets:           2000,
		Saturate:          true,
		Streams:           1,
		WarmupNs:          2000,
		MeasureNs:         20000,
		DrainNs:           200000,
		Test:              "write_bw",
		Iterations:        1000, // perftest default -n 1000 (perftest_parameters.h DEF_ITERS)
		TxDepth:           128,  // perftest default -t 128 (DEF_TX_BW)
		QPs:               1,
		InlineSize:        -1,
		OfferedLoad:       0.5,
		Injection:         "bernoulli",
		BurstPackets:      8,
		HotspotFraction:   0.2,
		Shift:             1,
		BackgroundPattern: "uniform",
		Connection:        "RC",
	}
}

// Validate checks ranges; prefix is the key path ("workload").
func (c *Config) Validate(prefix string) error {
	ok := false
	for _, k := range Kinds {
		ok = ok || k == c.Kind
	}
	if !ok {
		return fmt.Errorf("%s.kind: %q is not a workload (%s)", prefix, c.Kind, strings.Join(Kinds, ", "))
	}
	if slices.Contains(Collectives, c.Kind) {
		// nccl-tests' sizes go to GiBs; the bound is CollectiveRun's, and
		// BuildCollectiveOn refuses what would not fit in memory.
		if c.Size < 1 || c.Size > 1<<30 {
			return fmt.Errorf("%s.size: %d is out of range for a collective (1 to 1073741824 bytes)", prefix, c.Size)
		}
	} else if c.Size < 0 || c.Size > 8<<20 {
		return fmt.Errorf("%s.size: %d is out of range (0 to 8388608 bytes)", prefix, c.Size)
	}
	if err := checkAlgorithm(c.Kind, c.Algorithm, prefix); err != nil {
		return err
	}
	if err := checkRootKind(c.Kind, c.Root, prefix); err != nil {
		return err
	}
	if err := c.checkSharp(prefix); err != nil {
		return err
	}
	if err := checkCollectiveLoop(c.Kind, c.Algorithm, c.CollectiveIterations, c.CollectiveWarmup, c.Channels, prefix); err != nil {
		return err
	}
	if err := checkFlowControl(c.Kind, c.Algorithm, c.FlowControl, c.CollectiveAverage, prefix); err != nil {
		return err
	}
	if err := checkProtocol(c.Kind, c.Algorithm, c.Protocol, c.FlowControl, int64(c.SliceBytes), prefix); err != nil {
		return err
	}
	if c.Packets < 0 || c.Packets > 1e9 {
		return fmt.Errorf("%s.packets: %d is out of range (0 to 1e9)", prefix, c.Packets)
	}
	if c.VL < 0 || c.VL > 14 {
		return fmt.Errorf("%s.vl: %d is not a data VL (0 to 14)", prefix, c.VL)
	}
	if c.SL < 0 || c.SL > 15 {
		return fmt.Errorf("%s.sl: %d is not a service level (0 to 15)", prefix, c.SL)
	}
	if math.IsNaN(c.DrainGbps) || c.DrainGbps < 0 || c.DrainGbps > 1e5 {
		return fmt.Errorf("%s.drain_gbps: %v is out of range (0 for unlimited, up to 100000)", prefix, c.DrainGbps)
	}
	if c.Streams < 1 || c.Streams > 15 {
		return fmt.Errorf("%s.streams: %d is out of range (1 to 15)", prefix, c.Streams)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"warmup_ns", c.WarmupNs}, {"drain_ns", c.DrainNs}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1e12 {
			return fmt.Errorf("%s.%s: %v is out of range (0 to 1e12 ns)", prefix, f.key, f.v)
		}
	}
	if !(c.MeasureNs > 0 && c.MeasureNs <= 1e12) {
		return fmt.Errorf("%s.measure_ns: %v is out of range (above 0, up to 1e12 ns)", prefix, c.MeasureNs)
	}
	// Two at least, as PerftestRun.Validate asks: a latency is the time
	// between two posts.
	if c.Iterations < 2 || c.Iterations > 1e8 {
		return fmt.Errorf("%s.iterations: %d is out of range (2 to 1e8)", prefix, c.Iterations)
	}
	if c.TxDepth < 1 || c.TxDepth > 8192 {
		return fmt.Errorf("%s.tx_depth: %d is out of range (1 to 8192)", prefix, c.TxDepth)
	}
	if c.QPs < 1 || c.QPs > 4096 {
		return fmt.Errorf("%s.qps: %d is out of range (1 to 4096)", prefix, c.QPs)
	}
	if c.InlineSize < -1 || c.InlineSize > 1024 {
		return fmt.Errorf("%s.inline_size: %d is out of range (-1 for perftest's default, 0 to 1024 bytes)", prefix, c.InlineSize)
	}
	if math.IsNaN(c.OfferedLoad) || c.OfferedLoad <= 0 || c.OfferedLoad > 1 {
		return fmt.Errorf("%s.offered_load: %v is out of range (above 0, at most 1)", prefix, c.OfferedLoad)
	}
	if c.Injection != "bernoulli" && c.Injection != "onoff" {
		return fmt.Errorf("%s.injection: %q is not an injection process (bernoulli, onoff)", prefix, c.Injection)
	}
	if math.IsNaN(c.BurstPackets) || c.BurstPackets < 1 || c.BurstPackets > 1e6 {
		return fmt.Errorf("%s.burst_packets: %v is out of range (1 to 1e6)", prefix, c.BurstPackets)
	}
	if math.IsNaN(c.HotspotFraction) || c.HotspotFraction < 0 || c.HotspotFraction > 1 {
		return fmt.Errorf("%s.hotspot_fraction: %v is out of range (0 to 1)", prefix, c.HotspotFraction)
	}
	if c.Kind == "replay" && c.TraceFile == "" {
		return fmt.Errorf("%s.trace_file: is empty, but workload.kind replay needs a message trace (a path, relative to the config file's directory)", prefix)
	}
	if c.Kind != "replay" && c.TraceFile != "" {
		return fmt.Errorf("%s.trace_file: %q is set, but workload.kind %s does not use it (set workload.kind: replay to replay it, or remove the key)", prefix, c.TraceFile, c.Kind)
	}
	return c.checkOtherKinds(prefix)
}

// BackgroundServiceLevel returns the SL of a perftest's background
// traffic: workload.background_sl, or workload.sl when it is not set.
func (c *Config) BackgroundServiceLevel() int {
	if c.BackgroundSL == nil {
		return c.SL
	}
	return *c.BackgroundSL
}

// MulticastBackgroundLoad returns the offered load of a multicast run's
// unicast background: workload.background_load, or workload.offered_load
// when it is not set.
func (c *Config) MulticastBackgroundLoad() float64 {
	if c.BackgroundLoad == 0 {
		return c.OfferedLoad
	}
	return c.BackgroundLoad
}

// Normalize rewrites a transport given in another case to its canonical
// spelling (ud → UD), as link.Config.Normalize does for generations: the
// IB acronyms are accepted in any case and reported in one. A name that is
// none is left as written, for Validate to refuse.
func (c *Config) Normalize() {
	if u := strings.ToUpper(c.Connection); u == "RC" || u == "UD" {
		c.Connection = u
	}
}

// checkOtherKinds checks the keys other workload kinds read, whatever the
// kind: a value valid for its kind is left alone (switching kinds with
// --set workload.kind=… keeps working), but one no kind could use is
// refused, so a typo never hides behind a kind that ignores it.
func (c *Config) checkOtherKinds(prefix string) error {
	if !slices.Contains(PerftestTests, c.Test) {
		return fmt.Errorf("%s.test: %q is not a perftest test (%s)", prefix, c.Test, strings.Join(PerftestTests, ", "))
	}
	if c.Connection != "RC" && c.Connection != "UD" {
		return fmt.Errorf("%s.connection: %q is not a transport (RC, UD)", prefix, c.Connection)
	}
	if !slices.Contains(Patterns, c.BackgroundPattern) {
		return fmt.Errorf("%s.background_pattern: %q is not a synthetic pattern (%s)", prefix, c.BackgroundPattern, strings.Join(Patterns, ", "))
	}
	if c.Pattern != "" && !slices.Contains(PerftestPatterns, c.Pattern) {
		return fmt.Errorf("%s.pattern: %q is not a perftest pattern (%s)", prefix, c.Pattern, strings.Join(PerftestPatterns, ", "))
	}
	if c.Clients < 0 || c.Clients > MaxPerftestClients {
		return fmt.Errorf("%s.clients: %d is out of range (0 for every host the pattern can take, 1 to %d)", prefix, c.Clients, MaxPerftestClients)
	}
	if err := c.checkMcg(prefix); err != nil {
		return err
	}
	if err := c.checkSGEs(prefix); err != nil {
		return err
	}
	if err := c.checkSRQ(prefix); err != nil {
		return err
	}
	if err := checkCQMod(prefix, c.CQModCount, c.CQModPeriodUS, c.UseEvent); err != nil {
		return err
	}
	if sl := c.BackgroundSL; sl != nil && (*sl < 0 || *sl > 15) {
		return fmt.Errorf("%s.background_sl: %d is not a service level (0 to 15; leave it out for workload.sl)", prefix, *sl)
	}
	if c.SliceBytes < 0 || c.SliceBytes > 1<<30 {
		return fmt.Errorf("%s.slice_bytes: %d is out of range (0 for %d, up to 1073741824)", prefix, c.SliceBytes, DefaultSliceBytes)
	}
	if math.IsNaN(c.ReduceGBps) || c.ReduceGBps < 0 || c.ReduceGBps > 1e6 {
		return fmt.Errorf("%s.reduce_gbps: %v is out of range (0 for free, up to 1e6 GB/s)", prefix, c.ReduceGBps)
	}
	if c.Sizes != "" {
		if _, err := ParseSizes(c.Sizes, prefix+".sizes"); err != nil {
			return err
		}
	}
	return c.checkMulticastKeys(prefix)
}

// checkMcg checks workload.mcg and workload.mcg_receivers on their own
// (the receivers against the fabric's hosts when it is built).
func (c *Config) checkMcg(prefix string) error {
	if c.McgReceivers < 0 || c.McgReceivers > MaxMcgReceivers {
		return fmt.Errorf("%s.mcg_receivers: %d is out of range (0 for every host but the sender, 1 to %d)", prefix, c.McgReceivers, MaxMcgReceivers)
	}
	if !c.Mcg {
		if c.McgReceivers != 0 {
			return fmt.Errorf("%s.mcg_receivers: %d is set, but %s.mcg is false (set %s.mcg: true for a multicast perftest, or remove the key)", prefix, c.McgReceivers, prefix, prefix)
		}
		return nil
	}
	switch {
	case c.Kind != "perftest":
		return fmt.Errorf("%s.mcg: true is set, but %s.kind %s does not use it (a perftest's: set %s.kind: perftest, or remove the key)", prefix, prefix, c.Kind, prefix)
	case c.Pattern != "" && c.Pattern != PatternPair:
		return fmt.Errorf("%s.pattern: %q with %s.mcg: true: a multicast perftest has one sender (host 0) and its receivers (%s.mcg_receivers); remove the pattern", prefix, c.Pattern, prefix, prefix)
	case c.Clients > 1:
		// 1 is the one sender a multicast perftest has anyway.
		return fmt.Errorf("%s.clients: %d with %s.mcg: true: a multicast perftest has one sender (host 0) and its receivers (%s.mcg_receivers); set %s.clients to 1 or remove it", prefix, c.Clients, prefix, prefix, prefix)
	case c.Background:
		return fmt.Errorf("%s.mcg: true with %s.background: true is not modelled; set %s.background: false", prefix, prefix, prefix)
	}
	return CheckMcastRun(c.Test, c.Connection, c.QPs, prefix)
}

// SGECount returns workload.sges: the scatter/gather elements per
// perftest message, 1 when the key is not given.
func (c *Config) SGECount() int {
	if c.SGEs == nil {
		return 1
	}
	return *c.SGEs
}

// checkSGEs checks workload.sges on its own (against the message size in
// PerftestRun.Validate).
func (c *Config) checkSGEs(prefix string) error {
	n := c.SGECount()
	switch {
	case n < 1 || n > hca.MaxSendSGE:
		return fmt.Errorf("%s.sges: %d is out of range (1 to %d, the HCA's max_send_sge)", prefix, n, hca.MaxSendSGE)
	case n > 1 && c.Kind != "perftest":
		return fmt.Errorf("%s.sges: %d is set, but %s.kind %s does not use it (a perftest's: set %s.kind: perftest, or remove the key)", prefix, n, prefix, c.Kind, prefix)
	case n > 1 && c.Mcg:
		return fmt.Errorf("%s.sges: %d with %s.mcg: true is not modelled (a multicast perftest's datagrams take one element)", prefix, n, prefix)
	}
	return nil
}

// checkSRQ checks workload.use_srq and workload.rx_depth on their own
// (against the test and the QP count in PerftestRun.Validate).
func (c *Config) checkSRQ(prefix string) error {
	switch {
	case c.RxDepth < 0 || c.RxDepth > MaxPerftestRxDepth:
		return fmt.Errorf("%s.rx_depth: %d is out of range (0 for perftest's %d, 1 to %d)", prefix, c.RxDepth, perftestRxDepth, MaxPerftestRxDepth)
	case c.UseSRQ && c.Kind != "perftest":
		return fmt.Errorf("%s.use_srq: true is set, but %s.kind %s does not use it (a perftest's: set %s.kind: perftest, or remove the key)", prefix, prefix, c.Kind, prefix)
	case c.RxDepth != 0 && c.Kind != "perftest":
		return fmt.Errorf("%s.rx_depth: %d is set, but %s.kind %s does not use it (a perftest's: set %s.kind: perftest, or remove the key)", prefix, c.RxDepth, prefix, c.Kind, prefix)
	case c.UseSRQ && c.Mcg:
		return fmt.Errorf("%s.use_srq: true with %s.mcg: true is not modelled (a multicast perftest's receivers keep their own queues)", prefix, prefix)
	case c.RxDepth != 0 && c.Mcg:
		return fmt.Errorf("%s.rx_depth: %d with %s.mcg: true is not modelled (a multicast receiver keeps %d posted)", prefix, c.RxDepth, prefix, perftestRxDepth)
	case c.UseEvent && c.Kind != "perftest":
		return fmt.Errorf("%s.use_event: true is set, but %s.kind %s does not use it (a perftest's: set %s.kind: perftest, or remove the key)", prefix, prefix, c.Kind, prefix)
	case c.UseEvent && c.Mcg:
		return fmt.Errorf("%s.use_event: true with %s.mcg: true is not modelled (a multicast perftest's receivers poll)", prefix, prefix)
	}
	return nil
}

// checkCQMod checks workload.cq_moderation_count and _period_us: mlx5's
// 16-bit cq_max_count and 12-bit cq_period, and only with use_event (the
// moderation holds completion events; a polling loop takes none).
func checkCQMod(prefix string, count, periodUS int, useEvent bool) error {
	switch {
	case count < 0 || count > hca.MaxCQModCount:
		return fmt.Errorf("%s.cq_moderation_count: %d is out of range (0 to %d, mlx5's 16-bit cq_max_count)", prefix, count, hca.MaxCQModCount)
	case periodUS < 0 || periodUS > hca.MaxCQModPeriodUS:
		return fmt.Errorf("%s.cq_moderation_period_us: %d is out of range (0 to %d µs, mlx5's 12-bit cq_period)", prefix, periodUS, hca.MaxCQModPeriodUS)
	case count != 0 && !useEvent:
		return fmt.Errorf("%s.cq_moderation_count: %d is set, but %s.use_event is not (moderation holds completion events, which only use_event's loops take: set %s.use_event: true, or remove the key)", prefix, count, prefix, prefix)
	case periodUS != 0 && !useEvent:
		return fmt.Errorf("%s.cq_moderation_period_us: %d is set, but %s.use_event is not (moderation holds completion events, which only use_event's loops take: set %s.use_event: true, or remove the key)", prefix, periodUS, prefix, prefix)
	}
	return nil
}

// MaxMcgReceivers is the most receivers a multicast perftest takes: every
// unicast LID's host but the sender's (0x0001 … 0xBFFF).
const MaxMcgReceivers = 0xBFFF - 1

// TimeLimitError is a run that reached sim.max_time_ns before its workload
// finished: not a bug, a limit the user can raise.
type TimeLimitError struct{ Msg string }

func (e *TimeLimitError) Error() string {
	return e.Msg + " (the sim.max_time_ns limit; raise it with --set sim.max_time_ns=…)"
}
