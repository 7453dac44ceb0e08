package fabric

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/link"
)

// Topology kinds, as the topology.kind key spells them.
const (
	KindBackToBack    = "back-to-back"
	KindSingleSwitch  = "single-switch"
	KindFatTree2      = "fat-tree-2"
	KindFatTree3      = "fat-tree-3"
	KindDragonflyPlus = "dragonfly-plus"
	KindFile          = "file"
)

// TopologyKinds lists the topology kinds.
var TopologyKinds = []string{KindBackToBack, KindSingleSwitch, KindFatTree2, KindFatTree3, KindDragonflyPlus, KindFile}

// TopologyConfig is the `topology:` section: which fabric to build and how the
// subnet manager routes it.
type TopologyConfig struct {
	// Kind is back-to-back | single-switch | fat-tree-2 | fat-tree-3 |
	// dragonfly-plus | file.
	Kind string `yaml:"kind"`
	// Hosts is the number of hosts; 0 = every host port the topology has
	// (back-to-back 2, single-switch the radix, a fat tree full).
	Hosts int `yaml:"hosts"`
	// Radix is the ports per switch; 0 = switch.radix.
	Radix int `yaml:"radix"`
	// Oversubscription is a fat-tree leaf's down:up port ratio (1 = 1:1,
	// non-blocking; 2 = 2:1). fat-tree-2 and dragonfly-plus (its leaves);
	// fat-tree-3 is always 1.
	Oversubscription float64 `yaml:"oversubscription"`
	// Leaves is the leaf switches of a fat-tree-2; 0 = as many as the hosts
	// need (or as the spines can take when hosts is 0). In a dragonfly-plus
	// it is the leaves of each group; 0 = half a spine's ports' worth.
	Leaves int `yaml:"leaves"`
	// Spines is the spine switches of a fat-tree-2 (of each group of a
	// dragonfly-plus); 0 = one per leaf up-port. It must divide the
	// up-ports; each leaf then has up/spines parallel cables to each spine.
	Spines int `yaml:"spines"`
	// Groups is a dragonfly-plus's groups; 0 = as many as the hosts need,
	// or, when hosts is 0, the most the global ports join (spines ×
	// global_links + 1). omitempty, as are the other dragonfly-plus keys: a
	// config without them keeps its config hash.
	Groups int `yaml:"groups,omitempty"`
	// GlobalLinks is the global cables of each dragonfly-plus spine; 0 =
	// every port its group's leaves leave free.
	GlobalLinks int `yaml:"global_links,omitempty"`
	// GlobalCableLengthM is the length in metres of every dragonfly-plus
	// global cable (spine to spine, between groups); 0 =
	// DefaultGlobalCableLengthM.
	GlobalCableLengthM float64 `yaml:"global_cable_length_m,omitempty"`
	// GlobalCableMedium is the medium of every dragonfly-plus global cable:
	// copper | fibre; "" = fibre.
	GlobalCableMedium string `yaml:"global_cable_medium,omitempty"`
	// File is the topology file of kind file (format in docs/fabric.md).
	File string `yaml:"file"`
	// ReadFile reads File as the config's source resolves a relative path:
	// the CLI sets it (from the config file's directory; from the current
	// one for a value given with --set or a config read from stdin). Nil
	// reads File as it is, relative to the working directory. Not a key.
	ReadFile func(name string) ([]byte, error) `yaml:"-"`
	// Text is a topology file's contents, given in the config itself
	// instead of File (a config that carries its fabric: shipped examples,
	// sweeps and shards that run elsewhere). omitempty: configs without it
	// keep their effective config, and with it its hash.
	Text string `yaml:"text,omitempty"`
	// Routing is the subnet manager's routing engine: minhop | dmodk |
	// updown | random.
	Routing string `yaml:"routing"`
	// CableLengthM is the length in metres of every builder cable that joins
	// two switches; 0 = link.length_m. Host cables always take link.length_m;
	// a topology file gives its own lengths.
	CableLengthM float64 `yaml:"cable_length_m"`
	// AdaptiveRouting has the subnet manager give every switch, per host
	// destination, an adaptive routing group (the routing engine's
	// candidate ports), and the switches send each data packet out of the
	// least-loaded port of its group (docs/fabric.md, "Adaptive routing").
	// omitempty: false (static) is left out of the effective config, so a
	// config without the key keeps the trace header's config hash it had
	// before the key existed.
	AdaptiveRouting bool `yaml:"adaptive_routing,omitempty"`
	// AdaptiveRoutingSLs are the service levels whose packets an AR switch
	// may route adaptively, as NVIDIA's subnet manager enables AR per SL
	// (its ar_sl_mask); a packet on any other SL leaves by its LFT port.
	// Empty (the default) is every SL. Only with adaptive_routing.
	// omitempty: a config without the key keeps its config hash.
	AdaptiveRoutingSLs []int `yaml:"adaptive_routing_sls,omitempty"`
	// ARFlowletGapNs makes an AR switch keep a flow's (source LID,
	// destination LID, SL) port while its packets arrive less than this
	// apart, choosing again only after an idle gap (a flowlet); 0 (the
	// default) chooses for every packet. ns. Only with adaptive_routing.
	// omitempty: a config without the key keeps its config hash.
	ARFlowletGapNs float64 `yaml:"ar_flowlet_gap_ns,omitempty"`
	// NonMinimal adds to a dragonfly-plus's adaptive routing groups
	// non-minimal detours through a third group (a source spine's global
	// ports to spines with a direct cable to the destination's group),
	// their second global hop on VL 1 (docs/fabric.md, "Non-minimal
	// routing"). Only with kind dragonfly-plus, adaptive_routing, routing
	// minhop or random, and switch.vls 2 or more. omitempty: a config
	// without the key keeps its config hash.
	NonMinimal bool `yaml:"nonminimal,omitempty"`
	// HostLinkWidth and HostLinkGeneration are the width and generation of
	// every builder cable between a host and its switch (NDR200 host ports
	// on split cables: 2x); "" = link.width, link.generation. A host cable
	// of another generation takes its default FEC. Not for back-to-back
	// (set link.*) or file (the file gives each cable's). omitempty: a
	// config without them keeps its config hash.
	HostLinkWidth      string `yaml:"host_link_width,omitempty"`
	HostLinkGeneration string `yaml:"host_link_generation,omitempty"`
	// DegradedLinks are builder cables that run at another width or
	// generation than the rest (a cable that lost lanes trains down to
	// 1x and keeps running), each named by the port at either end.
	// omitempty: a config without them keeps its config hash.
	DegradedLinks []DegradedLink `yaml:"degraded_links,omitempty"`
}

// DegradedLink is one topology.degraded_links entry: the cable on port
// Cable ("Fabric.Leaf[0].Port[9]", either end) runs at Width and/or
// Generation, both directions.
type DegradedLink struct {
	Cable      string `yaml:"cable"`
	Width      string `yaml:"width,omitempty"`      // 1x … 12x; "" = the cable's
	Generation string `yaml:"generation,omitempty"` // SDR … XDR; "" = the cable's
}

// DefaultGlobalCableLengthM is a dragonfly-plus global cable's length when
// topology.global_cable_length_m is 0: 30 m of fibre. Global cables run
// between the racks of different groups, which dragonfly deployments span
// with optical links at "inter-cabinet distances in the range of tens of
// meters" (ISC High Performance 2017 workshops, LNCS 10524, doi
// 10.1007/978-3-319-67630-2_5); intra-group cables stay in or next to the
// group's racks (topology.cable_length_m).
const DefaultGlobalCableLengthM = 30

// MaxARFlowletGapNs bounds topology.ar_flowlet_gap_ns: one second, far
// beyond any run's idle gap, so a larger value would mean nothing more.
const MaxARFlowletGapNs = 1e9

// DefaultTopology returns the topology defaults.
func DefaultTopology() TopologyConfig {
	return TopologyConfig{
		// Two hosts back to back: the smallest fabric, and the one the
		// link and HCA tests run on.
		Kind: KindBackToBack,
		// 0: every host port the topology has.
		Hosts: 0,
		// 0: switch.radix, so one knob sizes the ASIC and the fabric.
		Radix: 0,
		// 1:1, a non-blocking fat tree (the full-bisection design of
		// Al-Fares et al., SIGCOMM 2008).
		Oversubscription: 1,
		// OpenSM's default engine (doc/current-routing.txt: "Min Hop ...
		// invoked when neither UPDN or the file method are specified").
		Routing: RoutingMinHop,
		// 0: link.length_m (link.Defaults: 2 m copper).
		CableLengthM: 0,
		// Static routing, the LFT alone: OpenSM without its AR manager.
		AdaptiveRouting: false,
	}
}

func oneOf(list []string) string { return strings.Join(list, ", ") }

// Validate checks the keys on their own; CheckShape checks the shape against
// the switch radix.
func (c *TopologyConfig) Validate() error {
	ok := false
	for _, k := range TopologyKinds {
		ok = ok || k == c.Kind
	}
	if !ok {
		return fmt.Errorf("topology.kind: %q is not a topology (%s)", c.Kind, oneOf(TopologyKinds))
	}
	ok = false
	for _, r := range RoutingEngines {
		ok = ok || r == c.Routing
	}
	if !ok {
		return fmt.Errorf("topology.routing: %q is not a routing engine (%s)", c.Routing, oneOf(RoutingEngines))
	}
	if c.Hosts < 0 || c.Hosts > LastUnicastLID {
		return fmt.Errorf("topology.hosts: %d is out of range (0 = every host port, up to %d)", c.Hosts, LastUnicastLID)
	}
	if c.Radix < 0 || c.Radix > MaxRadix {
		return fmt.Errorf("topology.radix: %d is out of range (0 = switch.radix, 2..%d)", c.Radix, MaxRadix)
	}
	if c.Radix == 1 {
		return fmt.Errorf("topology.radix: 1 is out of range (0 = switch.radix, 2..%d)", MaxRadix)
	}
	if math.IsNaN(c.Oversubscription) || c.Oversubscription <= 0 || c.Oversubscription > 255 {
		return fmt.Errorf("topology.oversubscription: %v is out of range (above 0, up to 255; 1 = non-blocking)", c.Oversubscription)
	}
	if c.Leaves < 0 || c.Leaves > MaxRadix {
		return fmt.Errorf("topology.leaves: %d is out of range (0 = derived, up to %d)", c.Leaves, MaxRadix)
	}
	if c.Spines < 0 || c.Spines > MaxRadix {
		return fmt.Errorf("topology.spines: %d is out of range (0 = derived, up to %d)", c.Spines, MaxRadix)
	}
	if err := c.validateARSLs(); err != nil {
		return err
	}
	if g := c.ARFlowletGapNs; math.IsNaN(g) || g < 0 || g > MaxARFlowletGapNs {
		return fmt.Errorf("topology.ar_flowlet_gap_ns: %v is out of range (0 = choose a port for every packet, up to %g ns)", g, float64(MaxARFlowletGapNs))
	}
	if c.ARFlowletGapNs != 0 && !c.AdaptiveRouting && c.Kind != KindBackToBack {
		return fmt.Errorf("topology.ar_flowlet_gap_ns: %v is set, but topology.adaptive_routing is false; set adaptive_routing true to use it, or remove the key", c.ARFlowletGapNs)
	}
	if c.NonMinimal {
		switch {
		case c.Kind != KindDragonflyPlus && c.Kind != KindFile:
			return fmt.Errorf("topology.nonminimal: true is set, but topology.kind %s is not a dragonfly-plus (the detours go through a Dragonfly+'s groups: the dragonfly-plus builder's, or a topology file's of that shape); use topology.kind dragonfly-plus or file, or remove the key", c.Kind)
		case !c.AdaptiveRouting:
			return fmt.Errorf("topology.nonminimal: true needs topology.adaptive_routing: true (the detours are ports of the adaptive routing groups, chosen by load); set adaptive_routing true, or remove the key")
		case c.Routing == RoutingUpDown:
			return fmt.Errorf("topology.nonminimal: true with topology.routing updown is not modelled (a detour relies on the intermediate spine's minimal route to the destination's group: minhop, dmodk, random)")
		}
	}
	if math.IsNaN(c.CableLengthM) || c.CableLengthM < 0 || c.CableLengthM > 1e5 {
		return fmt.Errorf("topology.cable_length_m: %v is out of range (0 = link.length_m, up to 100000 m)", c.CableLengthM)
	}
	if err := c.validateCableSpeeds(); err != nil {
		return err
	}
	if c.Groups < 0 || c.Groups > LastUnicastLID {
		return fmt.Errorf("topology.groups: %d is out of range (0 = derived, 2 up to spines × global_links + 1)", c.Groups)
	}
	if c.GlobalLinks < 0 || c.GlobalLinks > MaxRadix {
		return fmt.Errorf("topology.global_links: %d is out of range (0 = every spine port the leaves leave free, up to %d)", c.GlobalLinks, MaxRadix)
	}
	if g := c.GlobalCableLengthM; math.IsNaN(g) || g < 0 || g > 1e5 {
		return fmt.Errorf("topology.global_cable_length_m: %v is out of range (0 = %d m, up to 100000 m)", g, DefaultGlobalCableLengthM)
	}
	if m := c.GlobalCableMedium; m != "" {
		if _, ok := ParseMedium(m); !ok {
			return fmt.Errorf("topology.global_cable_medium: %q is not a medium (copper, fibre; empty = fibre)", m)
		}
	}
	// Keys a kind does not use are errors, not silently ignored, and each
	// says what to do: unused gives the reason and then remedy (the file
	// kind's names more than removing the key); a key of another kind
	// names that kind (elsewhere).
	remedy := "remove the key"
	unused := func(key string, value any, set bool, why string) error {
		if set {
			return fmt.Errorf("topology.%s: %v is set, but topology.kind %s does not use it (%s; %s)", key, value, c.Kind, why, remedy)
		}
		return nil
	}
	elsewhere := func(key string, value any, set bool, kind string) error {
		if set {
			return fmt.Errorf("topology.%s: %v is set, but topology.kind %s does not use it (set topology.kind: %s to use it)", key, value, c.Kind, kind)
		}
		return nil
	}
	var (
		leaves = func(why string) error { return unused("leaves", c.Leaves, c.Leaves != 0, why) }
		spines = func(why string) error { return unused("spines", c.Spines, c.Spines != 0, why) }
		file   = func() error {
			return firstErr(elsewhere("file", fmt.Sprintf("%q", c.File), c.File != "", KindFile),
				elsewhere("text", fmt.Sprintf("%d bytes", len(c.Text)), c.Text != "", KindFile))
		}
		cableLen = func(why string) error {
			return unused("cable_length_m", c.CableLengthM, c.CableLengthM != 0, why)
		}
		oversb = func(why string) error {
			return unused("oversubscription", c.Oversubscription, c.Oversubscription != 1, why)
		}
		dfly = func() error {
			return firstErr(elsewhere("groups", c.Groups, c.Groups != 0, KindDragonflyPlus),
				elsewhere("global_links", c.GlobalLinks, c.GlobalLinks != 0, KindDragonflyPlus),
				elsewhere("global_cable_length_m", c.GlobalCableLengthM, c.GlobalCableLengthM != 0, KindDragonflyPlus),
				elsewhere("global_cable_medium", c.GlobalCableMedium, c.GlobalCableMedium != "", KindDragonflyPlus))
		}
		err error
	)
	switch c.Kind {
	case KindBackToBack:
		if c.Hosts != 0 && c.Hosts != 2 {
			return fmt.Errorf("topology.hosts: %d hosts cannot be back to back (0 or 2)", c.Hosts)
		}
		why := "no switches; the one cable takes link.width and link.generation"
		err = firstErr(unused("host_link_width", c.HostLinkWidth, c.HostLinkWidth != "", why),
			unused("host_link_generation", c.HostLinkGeneration, c.HostLinkGeneration != "", why),
			unused("degraded_links", entries(len(c.DegradedLinks)), c.DegradedLinks != nil, why),
			unused("radix", c.Radix, c.Radix != 0, "no switches"), leaves("no switches"), spines("no switches"),
			oversb("no switches"), cableLen("no switches; the host cable takes link.length_m"), file(),
			unused("adaptive_routing", c.AdaptiveRouting, c.AdaptiveRouting, "no switches"),
			unused("adaptive_routing_sls", fmt.Sprint(c.AdaptiveRoutingSLs), c.AdaptiveRoutingSLs != nil, "no switches"),
			unused("ar_flowlet_gap_ns", c.ARFlowletGapNs, c.ARFlowletGapNs != 0, "no switches"), dfly())
	case KindSingleSwitch:
		err = firstErr(leaves("one switch"), spines("one switch"), oversb("one switch"),
			cableLen("one switch, so no switch-to-switch cables; host cables take link.length_m"), file(), dfly())
	case KindFatTree2:
		err = firstErr(file(), dfly())
	case KindFatTree3:
		why := "its shape follows topology.radix"
		err = firstErr(leaves(why), spines(why), oversb("a k-ary three-level tree is 1:1"), file(), dfly())
	case KindDragonflyPlus:
		err = file()
	case KindFile:
		if c.File == "" && c.Text == "" {
			return fmt.Errorf("topology.file: is empty, but topology.kind file needs a topology file (or its contents in topology.text)")
		}
		if c.File != "" && c.Text != "" {
			return fmt.Errorf("topology.text: is set, and so is topology.file %q: give the fabric one way", c.File)
		}
		// Each says where the file gives what the key would, and what to
		// do: a builder's section turned into a file section (hcasim
		// topology, then kind: file on the command line) keeps its keys,
		// and a --set of the whole section drops them.
		if c.File != "" {
			// The section set whole keeps only what it names, so it
			// names the routing the config chose (a fat tree's dmodk
			// would otherwise fall back to minhop) and adaptive routing.
			keep := ""
			if c.Routing != DefaultTopology().Routing {
				keep += ", routing: " + c.Routing
			}
			if c.AdaptiveRouting {
				keep += ", adaptive_routing: true"
			}
			remedy += fmt.Sprintf(", or replace the whole section: --set 'topology={kind: file, file: %s%s}'", c.File, keep)
		}
		why := "the file's host, switch and cable lines describe the fabric"
		err = firstErr(unused("host_link_width", c.HostLinkWidth, c.HostLinkWidth != "",
			"give a cable its own width= on its line in the file"),
			unused("host_link_generation", c.HostLinkGeneration, c.HostLinkGeneration != "",
				"give a cable its own gen= (and fec=) on its line in the file"),
			unused("degraded_links", entries(len(c.DegradedLinks)), c.DegradedLinks != nil,
				"give each slower cable its own width= or gen= on its line in the file"),
			unused("hosts", c.Hosts, c.Hosts != 0, "the file's host lines are the hosts"),
			unused("radix", c.Radix, c.Radix != 0, "each switch line in the file gives its ports"),
			leaves(why), spines(why), oversb(why),
			unused("cable_length_m", c.CableLengthM, c.CableLengthM != 0,
				"give a cable its length (5m) on its line in the file, link.length_m where it gives none"), dfly())
	}
	return err
}

// entries returns "1 entry" or "n entries".
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// validateCableSpeeds checks topology.host_link_width,
// host_link_generation and each degraded_links entry on their own; Build
// checks them against the link section and the fabric's ports.
func (c *TopologyConfig) validateCableSpeeds() error {
	if v := c.HostLinkWidth; v != "" {
		if _, err := parseCableWidth(v); err != nil {
			return fmt.Errorf("topology.host_link_width: %q is %v", v, err)
		}
	}
	if v := c.HostLinkGeneration; v != "" {
		if _, err := parseCableGen(v); err != nil {
			return fmt.Errorf("topology.host_link_generation: %q is %v", v, err)
		}
	}
	if c.DegradedLinks != nil && len(c.DegradedLinks) == 0 {
		return fmt.Errorf("topology.degraded_links: [] names no cable; leave the key out, or list {cable: \"Fabric.Leaf[0].Port[9]\", width: 1x}")
	}
	for i, d := range c.DegradedLinks {
		key := fmt.Sprintf("topology.degraded_links[%d]", i)
		if d.Cable == "" {
			return fmt.Errorf("%s.cable: is empty (the port at either end of the cable, e.g. Fabric.Leaf[0].Port[9])", key)
		}
		if d.Width == "" && d.Generation == "" {
			return fmt.Errorf("%s: %s names neither a width nor a generation (width: 1x, generation: HDR)", key, d.Cable)
		}
		if d.Width != "" {
			if _, err := parseCableWidth(d.Width); err != nil {
				return fmt.Errorf("%s.width: %q is %v", key, d.Width, err)
			}
		}
		if d.Generation != "" {
			if _, err := parseCableGen(d.Generation); err != nil {
				return fmt.Errorf("%s.generation: %q is %v", key, d.Generation, err)
			}
		}
	}
	return nil
}

// applyCableSpeeds gives a builder's cables topology.host_link_width and
// host_link_generation (cables with a host end) and degraded_links, and
// checks each against the link section lc.
func (c *TopologyConfig) applyCableSpeeds(t *Topology, lc link.Config) error {
	if c.HostLinkWidth != "" || c.HostLinkGeneration != "" {
		w, _ := parseCableWidth(c.HostLinkWidth)
		g, _ := parseCableGen(c.HostLinkGeneration)
		for i := range t.Cables {
			cb := &t.Cables[i]
			if t.Nodes[cb.A.Node].Kind != Host && t.Nodes[cb.B.Node].Kind != Host {
				continue
			}
			cb.Width, cb.Gen = w, g
			if err := checkCableSpeed(lc, *cb); err != nil {
				e := err.(*cableSpeedError)
				key := "topology.host_link_width"
				if e.Opt == "gen" {
					key = "topology.host_link_generation"
				}
				return e.keyed(key)
			}
		}
	}
	named := make(map[int]int, len(c.DegradedLinks)) // cable → the entry that named it
	for i, d := range c.DegradedLinks {
		key := fmt.Sprintf("topology.degraded_links[%d]", i)
		ci, err := degradedCable(t, d.Cable)
		if err != nil {
			return fmt.Errorf("%s.cable: %v", key, err)
		}
		if j, dup := named[ci]; dup {
			return fmt.Errorf("%s.cable: %s is the cable degraded_links[%d] names (%s); give each cable once", key, d.Cable, j, c.DegradedLinks[j].Cable)
		}
		named[ci] = i
		cb := &t.Cables[ci]
		if d.Width != "" {
			cb.Width, _ = parseCableWidth(d.Width)
		}
		if d.Generation != "" {
			cb.Gen, _ = parseCableGen(d.Generation)
		}
		if err := checkCableSpeed(lc, *cb); err != nil {
			e := err.(*cableSpeedError)
			sub := ".width"
			if e.Opt == "gen" {
				sub = ".generation"
			}
			return e.keyed(key + sub)
		}
	}
	return nil
}

// degradedCable returns the index of the cable on the port named name
// ("Fabric.Leaf[0].Port[9]"), or says why there is none.
func degradedCable(t *Topology, name string) (int, error) {
	i := strings.LastIndex(name, ".Port[")
	if i < 0 || !strings.HasSuffix(name, "]") {
		return 0, fmt.Errorf("%q is not a port (NODE.Port[N], e.g. Fabric.Leaf[0].Port[9])", name)
	}
	node, num := name[:i], name[i+len(".Port["):len(name)-1]
	n, ok := t.Lookup(node)
	if !ok {
		return 0, fmt.Errorf("%s: the fabric has no node %s", name, node)
	}
	p, err := strconv.Atoi(num)
	if err != nil || p < 1 || p > t.Nodes[n].Ports {
		return 0, fmt.Errorf("%s: %s has ports 1..%d", name, node, t.Nodes[n].Ports)
	}
	ci := t.cableOf[n][p]
	if ci < 0 {
		return 0, fmt.Errorf("%s has no cable", name)
	}
	return int(ci), nil
}

// validateARSLs checks topology.adaptive_routing_sls: service levels,
// each once, and only beside adaptive_routing.
func (c *TopologyConfig) validateARSLs() error {
	sls := c.AdaptiveRoutingSLs
	if sls == nil {
		return nil
	}
	if len(sls) == 0 {
		return fmt.Errorf("topology.adaptive_routing_sls: [] lets no SL adapt; leave the key out for every SL, or set topology.adaptive_routing false")
	}
	var seen uint16
	for _, sl := range sls {
		if sl < 0 || sl > 15 {
			return fmt.Errorf("topology.adaptive_routing_sls: %d is not a service level (0 to 15)", sl)
		}
		if seen&(1<<sl) != 0 {
			return fmt.Errorf("topology.adaptive_routing_sls: SL %d is listed twice (each SL once)", sl)
		}
		seen |= 1 << sl
	}
	if !c.AdaptiveRouting && c.Kind != KindBackToBack {
		return fmt.Errorf("topology.adaptive_routing_sls: %v is set, but topology.adaptive_routing is false; set adaptive_routing true to use it, or remove the key", sls)
	}
	return nil
}

// ARSLMask returns the service levels adaptive routing applies to, bit i
// for SL i: topology.adaptive_routing_sls, or every SL (0xFFFF) when it is
// empty; 0 without adaptive_routing.
func (c *TopologyConfig) ARSLMask() uint16 {
	if !c.AdaptiveRouting {
		return 0
	}
	if len(c.AdaptiveRoutingSLs) == 0 {
		return AllSLs
	}
	var m uint16
	for _, sl := range c.AdaptiveRoutingSLs {
		m |= 1 << (sl & 15)
	}
	return m
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// radix returns topology.radix, or switch.radix when it is 0.
func (c *TopologyConfig) radix(switchRadix int) int {
	if c.Radix != 0 {
		return c.Radix
	}
	return switchRadix
}

// CheckShape checks that the builder's shape works out for this switch radix
// (switch.radix), without building the fabric. It does not read a topology
// file.
func (c *TopologyConfig) CheckShape(switchRadix int) error {
	r := c.radix(switchRadix)
	switch c.Kind {
	case KindSingleSwitch:
		if h := c.Hosts; h != 0 && (h < 2 || h > r) {
			return fmt.Errorf("topology.hosts: %d does not fit a single switch of radix %d (2..%d)", h, r, r)
		}
	case KindFatTree2:
		_, err := c.fatTree2Spec(r).Shape()
		return err
	case KindFatTree3:
		_, err := FatTree3Size(r, c.Hosts)
		return err
	case KindDragonflyPlus:
		_, err := c.dragonflyPlusSpec(r).Shape()
		return err
	}
	return nil
}

func (c *TopologyConfig) dragonflyPlusSpec(radix int) DragonflyPlusSpec {
	return DragonflyPlusSpec{Radix: radix, Oversubscription: c.Oversubscription, Hosts: c.Hosts, Groups: c.Groups,
		Leaves: c.Leaves, Spines: c.Spines, GlobalLinks: c.GlobalLinks}
}

// dragonflyPlusCables returns the specs of a dragonfly-plus's leaf–spine
// and global cables: link's, at topology.cable_length_m when set, and at
// topology.global_cable_length_m (or DefaultGlobalCableLengthM) in
// topology.global_cable_medium (or fibre).
func (c *TopologyConfig) dragonflyPlusCables(link CableSpec) (local, global CableSpec) {
	local, global = link, link
	if c.CableLengthM > 0 {
		local.LengthM = c.CableLengthM
	}
	global.LengthM = DefaultGlobalCableLengthM
	if c.GlobalCableLengthM > 0 {
		global.LengthM = c.GlobalCableLengthM
	}
	global.Medium = Fibre
	if c.GlobalCableMedium != "" {
		global.Medium, _ = ParseMedium(c.GlobalCableMedium)
	}
	return local, global
}

func (c *TopologyConfig) fatTree2Spec(radix int) FatTree2Spec {
	return FatTree2Spec{Radix: radix, Oversubscription: c.Oversubscription, Hosts: c.Hosts, Leaves: c.Leaves, Spines: c.Spines}
}

// Build makes the topology. switchRadix is switch.radix (used when
// topology.radix is 0); link is the link section's length and medium
// (link.length_m, link.medium), which every cable gets except the
// switch-to-switch cables of a builder when topology.cable_length_m is set,
// and the cables a topology file gives a length or medium.
func (c *TopologyConfig) Build(switchRadix int, link CableSpec) (*Topology, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := c.radix(switchRadix)
	var t *Topology
	var err error
	switch c.Kind {
	case KindBackToBack:
		t = BackToBack(link)
	case KindSingleSwitch:
		hosts := c.Hosts
		if hosts == 0 {
			hosts = r
		}
		t, err = SingleSwitch(hosts, r, link)
	case KindFatTree2:
		t, err = FatTree2(c.fatTree2Spec(r), link)
	case KindFatTree3:
		t, err = FatTree3(r, c.Hosts, link)
	case KindDragonflyPlus:
		local, global := c.dragonflyPlusCables(link)
		t, err = DragonflyPlus(c.dragonflyPlusSpec(r), link, local, global)
	default: // KindFile; Validate admitted no other
		if c.Text != "" {
			// Errors name the key and the text's line: "topology.text:3: …".
			t, err = ParseTopology(strings.NewReader(c.Text), "topology.text", link)
			if err != nil {
				return nil, err
			}
			break
		}
		if c.ReadFile != nil {
			data, rerr := c.ReadFile(c.File)
			if rerr != nil {
				return nil, fmt.Errorf("topology.file: %v", rerr)
			}
			t, err = ParseTopology(bytes.NewReader(data), c.File, link)
		} else {
			t, err = LoadTopologyFile(c.File, link)
		}
		if err != nil {
			return nil, fmt.Errorf("topology.file: %v", err)
		}
	}
	if err != nil {
		return nil, err
	}
	if c.CableLengthM > 0 && c.Kind != KindDragonflyPlus { // a dragonfly-plus's builder set its own
		t.SetSwitchCableLength(c.CableLengthM)
	}
	if err := c.applyCableSpeeds(t, link.Link); err != nil {
		return nil, err
	}
	return t, nil
}

// Fabric builds the topology, runs the subnet manager with the configured
// routing engine and checks the routes for credit deadlock on the service
// levels the workload uses (nil = SL 0). seed seeds the random engine; vls is
// switch.vls; every port uses DefaultSL2VL(vls). A routing that can deadlock
// is an error naming a cycle of channels, returned before any simulation
// starts.
func (c *TopologyConfig) Fabric(switchRadix int, link CableSpec, seed uint64, vls int, sls []uint8) (*Topology, *Subnet, error) {
	return c.BuildFabric(switchRadix, link, SubnetOptions{Seed: seed, VLs: vls}, sls)
}

// BuildFabric is Fabric with every subnet option: o.Seed, o.VLs, o.SL2VL
// and o.SL2VLPairs (the switches' SL-to-VL tables, so the deadlock check
// follows the VLs the switches will use). o.Routing is taken from
// topology.routing. A switch.sl2vl_pairs table that drops an SL of sls on a
// pair some route takes is a *PairDropError.
func (c *TopologyConfig) BuildFabric(switchRadix int, link CableSpec, o SubnetOptions, sls []uint8) (*Topology, *Subnet, error) {
	if len(sls) == 0 {
		sls = []uint8{0}
	}
	flows := make([]slHosts, len(sls))
	for i, sl := range sls {
		flows[i] = slHosts{sl: sl}
	}
	return c.buildFabric(switchRadix, link, o, sls, func(int) []slHosts { return flows })
}

// buildFabric is BuildFabric with the drop check's flows given per host
// count (the run's traffic: which hosts send to which on each SL).
func (c *TopologyConfig) buildFabric(switchRadix int, link CableSpec, o SubnetOptions, sls []uint8,
	flows func(hosts int) []slHosts) (*Topology, *Subnet, error) {
	t, err := c.Build(switchRadix, link)
	if err != nil {
		return nil, nil, err
	}
	o.Routing = c.Routing
	o.AdaptiveRouting = c.AdaptiveRouting
	o.ARSLs = c.ARSLMask()
	o.NonMinimal = c.NonMinimal
	sn, err := NewSubnet(t, o)
	if err != nil {
		var nd *NotDragonflyError
		if errors.As(err, &nd) {
			return nil, nil, fmt.Errorf("topology.nonminimal: true, but %s; use a dragonfly-plus (or a topology file of one), or remove the key", nd.Reason)
		}
		return nil, nil, err
	}
	if err := sn.checkPairDrops(flows(len(sn.hosts))); err != nil {
		return nil, nil, err
	}
	if err := sn.CheckDeadlock(sls); err != nil {
		if sn.NonMinimal() && sn.staticDeadlockFree(sls) {
			// The detours' second global hop has VL 1 to itself only when
			// no SL the run sends maps to VL 1 elsewhere.
			return nil, nil, fmt.Errorf("topology.nonminimal: %v (a detour's second global cable takes VL %d; an SL the run sends that maps to VL %d on other hops shares it and can close a cycle: keep the run's SLs on other VLs, or set nonminimal false)", err, DetourVL, DetourVL)
		}
		if sn.AdaptiveRouting() && sn.staticDeadlockFree(sls) {
			// The AR groups' alternatives close the cycle: the key to
			// change is adaptive_routing (or an engine whose groups keep
			// to up*/down* routes), not the routing that works alone.
			return nil, nil, fmt.Errorf("topology.adaptive_routing: %v (the static %s routes have none: set adaptive_routing false, or routing updown, whose AR groups keep to up*/down* routes)", err, c.Routing)
		}
		return nil, nil, fmt.Errorf("topology.routing: %v", err)
	}
	return t, sn, nil
}
