package fabric

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hcasim/hcasim/cc"
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
	"github.com/hcasim/hcasim/workload"
)

// Config is a whole design point: every section of a config file.
type Config struct {
	// Name labels the design point in reports.
	Name string `yaml:"name"`
	// Description is free text for people reading the config.
	Description string `yaml:"description"`
	// Seed makes a run reproducible: the same config and seed give
	// byte-identical results and traces.
	Seed uint64 `yaml:"seed"`

	Link     link.Config       `yaml:"link"`
	HCA      hca.Config        `yaml:"hca"`
	Switch   switchasic.Config `yaml:"switch"`
	Topology TopologyConfig    `yaml:"topology"`
	Workload workload.Config   `yaml:"workload"`
	Sim      SimConfig         `yaml:"sim"`
	// CC is congestion control (IBA Annex A10) for the synthetic
	// workloads; omitted from the effective config while it is the
	// defaults (cc.Config.IsZero), so configs without it hash as before.
	CC cc.Config `yaml:"cc,omitempty"`

	// Sweep maps dotted keys to lists of values (or {from, to, step}
	// ranges); the design points are their Cartesian product.
	Sweep map[string]any `yaml:"sweep"`
}

// SimConfig holds run-control knobs.
type SimConfig struct {
	// MaxTimeNs stops a run that has not finished by this simulated time
	// (a guard against a workload that never ends); ns.
	MaxTimeNs float64 `yaml:"max_time_ns"`
	// Check turns on the invariant checkers (lossless, buffers and credits,
	// ordering, integrity, protection, wire); the CLI's --check sets it.
	Check bool `yaml:"check"`
	// Engine is the discrete-event engine: hcasim (a typed-heap serial
	// engine implementing Akita's sim.Engine, FIFO among same-time events)
	// or akita (Akita v3's SerialEngine). docs/performance.md compares them.
	Engine string `yaml:"engine"`
	// PerCycle runs every switch's allocation on every core clock edge, the
	// per-cycle definition, instead of only on edges where something
	// changed. Slower; results are identical (TestPerCycleRoundsAgree).
	PerCycle bool `yaml:"per_cycle"`
	// AllPortEvents queues an event for the end of every packet on every
	// wire and tells every port's owner of every credit arrival, as the
	// definition does, instead of only the wire ends a block waits for
	// (link.Port.SendQuiet) and the credits of an owner with something to
	// send (link.Port.Pending). More events; results and traces are
	// identical (TestQuietPortsAgree).
	AllPortEvents bool `yaml:"all_port_events,omitempty"`
	// Partitions splits one fabric into this many parts that run in
	// parallel (sim.threads), in windows of the shortest cable's latency
	// between parts (components.Group). 1 is the serial run. Synthetic workloads
	// only; deterministic for a given count, but same-picosecond ties can
	// resolve differently from the serial run (docs/performance.md).
	Partitions int `yaml:"partitions"`
	// Threads is how many threads run the partitions, each its share one
	// after another per window (0: one per partition up to the CPUs Go
	// may use). Results do not depend on it.
	Threads int `yaml:"threads"`
}

// MaxPartitions bounds sim.partitions.
const MaxPartitions = 64

// Defaults returns the default design point. Each section's defaults live
// with the block they configure.
func Defaults() Config {
	return Config{
		Name:     "default",
		Seed:     1,
		Link:     link.Defaults(),
		HCA:      hca.Defaults(),
		Switch:   switchasic.Defaults(),
		Topology: DefaultTopology(),
		Workload: workload.Defaults(),
		Sim:      SimConfig{MaxTimeNs: 100e6, Engine: components.EngineHcasim, Partitions: 1},
		CC:       cc.Defaults(),
	}
}

// AnyCase reports whether key is one whose value Normalize accepts in any
// case (4x and 4X are one width): a sweep that lists both would run one
// design point twice.
func AnyCase(key string) bool {
	switch key {
	case "link.generation", "link.width", "workload.connection", "hca.profile":
		return true
	}
	return false
}

// Normalize rewrites the values accepted in any case — the IB acronyms
// link.generation, link.width, workload.connection, and hca.profile — to
// their canonical spelling. Decode calls it before Validate, so everything
// after decoding (the model, params, results) sees one form. Other names
// (kinds, tests, media, allocators) are matched exactly and left alone.
func (c *Config) Normalize() {
	c.Link.Normalize()
	c.HCA.Normalize()
	c.Workload.Normalize()
}

// Validate checks every section and the combinations across sections.
func (c *Config) Validate() error {
	if err := c.Link.Validate("link"); err != nil {
		return err
	}
	if err := c.HCA.Validate(); err != nil {
		return err
	}
	if err := c.Switch.Validate(); err != nil {
		return err
	}
	if err := c.Topology.Validate(); err != nil {
		return err
	}
	if err := c.Topology.CheckShape(c.Switch.Radix); err != nil {
		return err
	}
	if err := c.checkBuilderCableSpeeds(); err != nil {
		return err
	}
	if c.Topology.NonMinimal && c.Switch.VLs < 2 {
		return fmt.Errorf("topology.nonminimal: true moves a detour's second global hop to VL %d, but switch.vls is %d; set switch.vls to 2 or more (each data VL gets switch.vl_buffer_bytes), or remove the key", DetourVL, c.Switch.VLs)
	}
	if err := c.Workload.Validate("workload"); err != nil {
		return err
	}
	// Back to back, a collective's HCA ports map workload.sl through the
	// same table (fabric.NewHCAHost), and so do a perftest's on any SL but
	// 0; on SL 0 its two HCAs send on VL 0 whatever the table says. A
	// stream (back to back only) never looks the table up: its packets go
	// on workload.vl, vl+1, … whatever their SL, and no switch sees them.
	if c.Workload.Kind != "stream" &&
		(c.Topology.Kind != "back-to-back" || c.Workload.Kind != "perftest" || c.Workload.SL != 0) {
		// Only the SLs packets carry (wireSLs) are checked. Workload.Validate
		// has checked the SLs are 0..15.
		t := c.Switch.SL2VLTable()
		w := &c.Workload
		for _, sl := range c.wireSLs() {
			if t[sl] != ib.ManagementVL {
				continue
			}
			if hcaDriven(w.Kind) && int(sl) == w.SL && sl == 0 {
				return fmt.Errorf("switch.sl2vl: SL 0 maps to VL 15 (drop), but the HCAs of workload.kind %s send on SL 0 (workload.sl), so every packet they send would be dropped; map SL 0 to a data VL (below switch.vls %d)", w.Kind, c.Switch.VLs)
			}
			if int(sl) != w.SL {
				return fmt.Errorf("workload.background_sl: SL %d maps to VL 15 (drop) in switch.sl2vl, so the switches would drop every background packet; map it to a data VL (below switch.vls %d) or use another SL", sl, c.Switch.VLs)
			}
			who := "the switches would drop every data packet"
			if c.Topology.Kind == KindBackToBack {
				who = "the HCA ports, which map SL to VL with it, could not send a data packet"
			}
			return fmt.Errorf("workload.sl: SL %d maps to VL 15 (drop) in switch.sl2vl, so %s; map it to a data VL (below switch.vls %d) or use another SL", sl, who, c.Switch.VLs)
		}
	}
	if sl := c.Workload.SL; hcaDriven(c.Workload.Kind) && c.Topology.ARSLMask()&(1<<sl) != 0 {
		// The hca model's transport takes a packet that overtook another
		// of its QP as a PSN sequence error (NAK and go-back-N), and
		// adaptive routing reorders the packets of a flow on the SLs it
		// applies to. The HCAs send on workload.sl (requests, responses
		// and ACKs alike), so that SL must keep the static routes;
		// other SLs (a perftest's background) may adapt.
		if len(c.Topology.AdaptiveRoutingSLs) == 0 {
			return fmt.Errorf("topology.adaptive_routing: true reorders the packets of a flow on every SL (topology.adaptive_routing_sls is unset), but workload.kind %s runs the hca model's transport on SL %d (workload.sl), which needs them in order; list the SLs that may adapt in topology.adaptive_routing_sls without SL %d (e.g. background traffic on workload.background_sl: 1 and adaptive_routing_sls: [1]), use a synthetic workload, or set adaptive_routing: false", c.Workload.Kind, sl, sl)
		}
		return fmt.Errorf("topology.adaptive_routing_sls: %v has SL %d, on which workload.kind %s runs the hca model's transport (workload.sl), which needs a flow's packets in order; leave SL %d out of the list, or put the HCAs on an SL it does not have", c.Topology.AdaptiveRoutingSLs, sl, c.Workload.Kind, sl)
	}
	if n := len(c.Switch.SL2VLPairs); n > 0 && c.Topology.Kind == KindBackToBack {
		return fmt.Errorf("switch.sl2vl_pairs: %d entries, but topology.kind back-to-back has no switches to program; remove them or use a switched topology", n)
	}
	if c.Sim.Engine != components.EngineHcasim && c.Sim.Engine != components.EngineAkita {
		return fmt.Errorf("sim.engine: %q is not an engine (hcasim, akita)", c.Sim.Engine)
	}
	if !(c.Sim.MaxTimeNs > 0 && c.Sim.MaxTimeNs <= 1e13) {
		return fmt.Errorf("sim.max_time_ns: %v is out of range (above 0, up to 1e13)", c.Sim.MaxTimeNs)
	}
	w := &c.Workload
	if end, ok := c.windowEnd(); ok && ib.FromNanoseconds(c.Sim.MaxTimeNs) < end {
		// The run would stop inside its own measurement window, and every
		// rate would be the part it saw divided by the whole window.
		return fmt.Errorf("sim.max_time_ns: %v stops the run before its measurement window ends (workload.warmup_ns %v + workload.measure_ns %v = %v ns); give at least %v, or a shorter window",
			c.Sim.MaxTimeNs, w.WarmupNs, w.MeasureNs, float64(end)/1000, float64(end)/1000)
	}
	if err := c.validatePartitions(); err != nil {
		return err
	}
	if err := c.validateCC(); err != nil {
		return err
	}
	if w.Kind == "perftest" && w.Background && c.Topology.Kind == "back-to-back" {
		return fmt.Errorf("workload.background: true, but topology.kind back-to-back has only the two perftest hosts; background traffic needs a fabric with more")
	}
	if w.Kind == "stream" && c.Topology.Kind != "back-to-back" {
		return fmt.Errorf("workload.kind: stream runs on topology.kind back-to-back, not %q", c.Topology.Kind)
	}
	if w.Kind == "perftest" {
		// The perftest's own combinations (test × transport, sizes, inline)
		// are checked before any run, like every other key.
		run := perftestRun(c)
		if err := run.Validate(); err != nil {
			return err
		}
		if c.Topology.Kind == "back-to-back" {
			// A fabric's pairs are checked against its host count when
			// it is built; back to back there are two.
			if _, err := perftestPairs(c, 2); err != nil {
				return err
			}
		}
	}
	if isSynthetic(w.Kind) {
		tc := w.Traffic()
		if err := tc.Validate(); err != nil {
			return err
		}
		if err := tc.CheckMTU(c.Link.MTU); err != nil {
			return err
		}
	}
	if w.Mcg {
		if err := c.validateMcg(); err != nil {
			return err
		}
	}
	if w.Algorithm == workload.AlgSharp {
		if err := c.validateSharp(); err != nil {
			return err
		}
	}
	if w.Kind == workload.KindMulticast {
		if err := c.validateMulticast(); err != nil {
			return err
		}
	}
	if w.Kind == "stream" || isSynthetic(w.Kind) {
		if w.Size > c.Link.MTU {
			return fmt.Errorf("workload.size: %d bytes is more than link.mtu %d (a %s packet carries at most one MTU)", w.Size, c.Link.MTU, w.Kind)
		}
		if w.Size < 1 {
			return fmt.Errorf("workload.size: %d is out of range (1 to link.mtu %d)", w.Size, c.Link.MTU)
		}
	}
	vls := c.Switch.VLs
	// A refresh sends one flow-control packet per data VL, and flow-control
	// packets go ahead of data: a period that the refresh packets fill
	// starves data for good. At most half the wire for refreshes.
	fcWire := c.Link.Timing(c.Link.LengthM).Serialization(ib.FlowControlBytes) * ib.PS(vls)
	if c.Link.FCRefresh() < 2*fcWire {
		return fmt.Errorf("link.fc_refresh_ns: %v is too short: each refresh puts a flow-control packet per data VL ahead of data, %.3f ns of this link's wire for switch.vls %d; give at least %.3f ns (refreshes at most half the wire)",
			c.Link.FCRefreshNs, float64(fcWire)/1000, vls, float64(2*fcWire)/1000)
	}
	if w.VL+w.Streams > vls {
		return fmt.Errorf("workload.vl: VLs %d..%d do not exist with switch.vls %d (hosts use the switch's VL count)", w.VL, w.VL+w.Streams-1, vls)
	}
	// 12-bit credit counters can advertise at most 2048 blocks ahead (the
	// send test's half range), so one VL's buffer is at most 128 KiB.
	// (hca.Config.Validate has checked it is a multiple of 64.)
	if c.HCA.VLBufferBytes > 2048*ib.CreditBytes {
		return fmt.Errorf("hca.vl_buffer_bytes: %d is more than 131072 (2048 credits, the 12-bit FCCL's reach)", c.HCA.VLBufferBytes)
	}
	maxPkt := ib.Packet{Opcode: ib.RDMAWriteOnlyImm, GRH: false, PayloadLen: c.Link.MTU}
	if c.HCA.VLBufferBytes < maxPkt.WireBytes() {
		return fmt.Errorf("hca.vl_buffer_bytes: %d cannot hold one %d-byte packet of link.mtu %d (at least %d)", c.HCA.VLBufferBytes, maxPkt.WireBytes(), c.Link.MTU, ib.Credits(maxPkt.WireBytes())*ib.CreditBytes)
	}
	if c.Topology.Kind != "back-to-back" {
		if err := c.Switch.CheckPacketFits(maxPkt.WireBytes()); err != nil {
			return err
		}
	}
	return nil
}

// MeasureEnd returns when the measurement window of a workload that runs to
// a fixed simulated time (synthetic traffic) ends; ok is false for those
// that run to a count (perftest, collectives, streams). A progress display
// uses it as the run's length (the drain after it is short).
func (c *Config) MeasureEnd() (end ib.PS, ok bool) {
	if !isSynthetic(c.Workload.Kind) {
		return 0, false
	}
	return ib.FromNanoseconds(c.Workload.WarmupNs) + ib.FromNanoseconds(c.Workload.MeasureNs), true
}

// windowEnd returns when the measurement window ends for a workload that
// runs to a time: synthetic traffic and a saturating stream; ok is false for
// those that run to a count.
func (c *Config) windowEnd() (end ib.PS, ok bool) {
	w := &c.Workload
	if !isSynthetic(w.Kind) && !(w.Kind == "stream" && w.Saturate) {
		return 0, false
	}
	return ib.FromNanoseconds(w.WarmupNs) + ib.FromNanoseconds(w.MeasureNs), true
}

// hcaDriven reports whether a workload kind runs on HCAs, whose QPs send
// on workload.sl.
func hcaDriven(kind string) bool {
	return kind == "perftest" || kind == "replay" || slices.Contains(workload.Collectives, kind)
}

// hasBackground reports whether the workload runs synthetic background
// traffic beside it (workload.background, read by a perftest and a
// multicast run).
func hasBackground(w *workload.Config) bool {
	return (w.Kind == "perftest" || w.Kind == workload.KindMulticast) && w.Background
}

// wireSLs returns the service levels the run's packets carry: workload.sl,
// and for a perftest or multicast run with background traffic on another
// SL that one too.
func (c *Config) wireSLs() []uint8 {
	w := &c.Workload
	if bg := w.BackgroundServiceLevel(); hasBackground(w) && bg != w.SL {
		return []uint8{uint8(w.SL), uint8(bg)}
	}
	return []uint8{uint8(w.SL)}
}

func isSynthetic(kind string) bool {
	switch kind {
	case "uniform", "permutation", "shift", "bitcomp", "hotspot", "incast":
		return true
	}
	return false
}

// Loaded is a config read from a source, with the node tree it was decoded
// from (after overrides), for sweeps and for the config hash in traces.
type Loaded struct {
	Config Config
	Node   *yaml.Node
	// ReadFile reads a file a key names (workload.trace_file) as the
	// config file's directory resolves it: the CLI sets it from where the
	// config came from (a directory on disk, or the shipped configs). Nil
	// reads the path as it is, relative to the working directory.
	ReadFile func(name string) ([]byte, error)
}

// Hash returns a SHA-256 of the effective config (the decoded values, not the
// text), so two spellings of the same design point hash alike.
func (l *Loaded) Hash() string {
	h := sha256.Sum256(l.Identity())
	return hex.EncodeToString(h[:8])
}

// Identity is what a design point's hashes (Hash, a trace's header) cover:
// its effective config, and for a replay the bytes of its message trace
// too, since two traces under one config are two design points. A trace
// that cannot be read adds nothing (the run refuses it). Every other kind
// is its EffectiveYAML alone, so its hashes are what they were.
func (l *Loaded) Identity() []byte {
	b := l.EffectiveYAML()
	w := &l.Config.Workload
	if w.Kind != "replay" || w.TraceFile == "" {
		return b
	}
	read := l.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	if data, err := read(w.TraceFile); err == nil {
		b = append(append(b, "\n# workload.trace_file contents:\n"...), data...)
	}
	return b
}

// CheckFiles reads and parses the files the design point's keys name
// (topology.file; a replay's workload.trace_file, against the fabric's
// hosts), so that a sweep refuses a missing or broken one before any
// point runs, in one line, as it refuses a bad value; a run reads them
// again. Nil for a config that names none.
func (l *Loaded) CheckFiles() error {
	t := &l.Config.Topology
	fromFile := t.Kind == KindFile && t.Text == ""
	replay := l.Config.Workload.Kind == "replay"
	if !fromFile && !replay {
		return nil
	}
	topo, err := l.Config.BuildTopology()
	if err != nil {
		if fromFile {
			// The run's ConfigureFabric fails alike, as a user's error.
			return &UnsupportedError{Msg: err.Error()}
		}
		return nil // the run reports the fabric's own error
	}
	if !replay {
		return nil
	}
	_, err = l.replayTrace(len(topo.Hosts()))
	return err
}

// EffectiveYAML is the design point as decoded (defaults filled in), as YAML.
// sim.check and sim.threads are left out: checking a run, or running its
// partitions on more threads, changes no result (TestPartitionedDeterministic),
// so such runs carry the same config hash, and hcasim diff does not call
// their identical traces' configs different. switch.mcast_replication's
// default, split, is left out too (the key is omitted when empty): it is
// the replication every run had before the key existed, so those runs keep
// their config hash whether or not they spell it.
func (l *Loaded) EffectiveYAML() []byte {
	c := l.Config
	c.Sim.Check = false
	c.Sim.Threads = 0
	if c.Switch.McastReplication == switchasic.McastSplit {
		c.Switch.McastReplication = ""
	}
	b, err := yaml.Marshal(&c)
	if err != nil {
		panic(fmt.Sprintf("fabric: marshal config: %v", err))
	}
	return b
}

// Decode decodes a config node tree (overrides already applied), starting
// from the defaults and from hca.profile if one is named, and validates it.
func Decode(root *yaml.Node) (*Loaded, error) {
	return decode(root, true)
}

func decode(root *yaml.Node, validate bool) (*Loaded, error) {
	cfg := Defaults()
	if n := config.Lookup(root, "hca.profile"); n != nil && n.Kind == yaml.ScalarNode {
		p, err := hca.Profile(n.Value)
		if err != nil {
			return nil, &config.Error{Msg: err.Error()}
		}
		cfg.HCA = p
	}
	if err := config.Decode(root, &cfg); err != nil {
		var o *config.OverflowError
		if errors.As(err, &o) {
			return nil, overflowRange(root, o)
		}
		return nil, err
	}
	cfg.Normalize()
	if !validate {
		return &Loaded{Config: cfg, Node: root}, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, &config.Error{Msg: err.Error()}
	}
	return &Loaded{Config: cfg, Node: root}, nil
}

// overflowRange turns an integer key's overflow of its Go type (1e30 for
// workload.iterations) into the key's own range: the key is decoded once
// more holding the type's limit on that side, and when Validate refuses
// that value by the key's name, its message, with the value as written,
// is the answer ("workload.iterations: 1e30 is out of range (2 to 1e8)").
// A key whose range is its type's (seed), or a config with an earlier
// mistake, keeps the type's range.
func overflowRange(root *yaml.Node, o *config.OverflowError) (err error) {
	err = &config.Error{Msg: o.Msg}
	n := o.Node
	value, tag, style := n.Value, n.Tag, n.Style
	n.Value, n.Tag, n.Style = o.Bound, "!!int", 0
	defer func() {
		n.Value, n.Tag, n.Style = value, tag, style
		if recover() != nil {
			// A check that cannot take the type's limit is no reason
			// to lose the user's answer: keep the type's range.
			err = &config.Error{Msg: o.Msg}
		}
	}()
	cfg := Defaults()
	if p := config.Lookup(root, "hca.profile"); p != nil && p.Kind == yaml.ScalarNode {
		if hp, perr := hca.Profile(p.Value); perr == nil {
			cfg.HCA = hp
		}
	}
	if config.Decode(root, &cfg) != nil {
		return err
	}
	cfg.Normalize()
	verr := cfg.Validate()
	prefix := o.Key + ": " + o.Bound + " "
	if verr == nil || !strings.HasPrefix(verr.Error(), prefix) {
		return err
	}
	return &config.Error{Msg: o.Key + ": " + o.Value + " " + strings.TrimPrefix(verr.Error(), prefix)}
}

// Load parses YAML text, applies `key=value` overrides and decodes.
//
// nil data (not an empty file) starts from the defaults alone, for tests and
// programs that give every key as an override.
func Load(data []byte, sets []string) (*Loaded, error) {
	return load(data, sets, true)
}

// LoadSweepBase is Load for the base of a sweep whose every point is
// validated on its own (sweep.Expand): the base's values are decoded (their
// types and the known keys checked) but not validated, since a value the
// sweep replaces at every point is never run. Anything else must use Load.
func LoadSweepBase(data []byte, sets []string) (*Loaded, error) {
	return load(data, sets, false)
}

func load(data []byte, sets []string, validate bool) (*Loaded, error) {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if data != nil {
		var err error
		if root, err = config.Parse(data); err != nil {
			return nil, err
		}
	}
	for _, s := range sets {
		if err := config.Set(root, s); err != nil {
			return nil, err
		}
	}
	return decode(root, validate)
}

// validateCC checks the cc section and where it can run: the synthetic
// endpoints and the HCAs react to BECN, so every workload but on a
// back-to-back link, where there is no switch to mark (stream runs only
// there).
func (c *Config) validateCC() error {
	if err := c.CC.Validate(); err != nil {
		return err
	}
	if c.CC.Report && c.Workload.Kind != workload.PatternHotspot {
		return fmt.Errorf("cc.report: true splits the accepted load of workload.kind hotspot (host 0 against the others), not %s; remove it or use hotspot", c.Workload.Kind)
	}
	if !c.CC.Enable {
		return nil
	}
	if c.Topology.Kind == KindBackToBack {
		return fmt.Errorf("cc.enable: true needs switches to mark FECN; topology.kind back-to-back has none")
	}
	return nil
}

// validatePartitions checks sim.partitions and what a partitioned run
// cannot do: perftest, collectives and streams drive the fabric from one
// controller whose end must stop every partition at once (a partition can
// only stop the others at its window's end, after they ran on a little).
func (c *Config) validatePartitions() error {
	n := c.Sim.Partitions
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("sim.partitions: %d is out of range (1 = serial, up to %d)", n, MaxPartitions)
	}
	if t := c.Sim.Threads; t < 0 || t > n {
		return fmt.Errorf("sim.threads: %d is out of range (0 = one per partition up to the CPUs, up to sim.partitions %d)", t, n)
	}
	if n == 1 {
		return nil
	}
	switch {
	case !isSynthetic(c.Workload.Kind):
		return fmt.Errorf("sim.partitions: %d needs a synthetic workload (uniform, permutation, shift, bitcomp, hotspot, incast), not workload.kind %s; use sim.partitions: 1", n, c.Workload.Kind)
	case c.Sim.Engine != components.EngineHcasim:
		return fmt.Errorf("sim.partitions: %d runs on sim.engine hcasim, not %s", n, c.Sim.Engine)
	case c.Topology.Kind == "back-to-back":
		return fmt.Errorf("sim.partitions: %d needs switches to split; topology.kind back-to-back has none", n)
	}
	return nil
}
