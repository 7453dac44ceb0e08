package fabric

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hcasim/hcasim/link"
)

// A topology file describes any fabric the builders do not, one statement a
// line; '#' starts a comment:
//
//	host   Fabric.Host[0]
//	switch Fabric.Switch[0] 8                # name, number of ports (radix)
//	root   Fabric.Switch[0]                  # optional: an up/down root
//	cable  Fabric.Host[0].Port[1] Fabric.Switch[0].Port[1] 2.5m copper
//	cable  Fabric.Host[1].Port[1] Fabric.Switch[0].Port[2] ber=1e-7
//	cable  Fabric.Host[2].Port[1] Fabric.Switch[0].Port[3] width=1x gen=NDR
//
// A cable's length (metres, with the unit: "2.5m"), medium ("copper" or
// "fibre"), post-FEC bit error rate ("ber=1e-7", both directions), width
// ("width=1x": a degraded or split cable), generation ("gen=HDR") and FEC
// ("fec=rs544"; a cable of another generation takes that generation's
// default unless given) are optional and default to the link section's.
// A node must be
// declared before a cable names it, and a cable must join two different
// nodes (Topology.Connect). Errors name the file and line.

// ParseTopology reads a topology file from r; name labels errors (usually the
// path) and def gives cables without a length or medium theirs.
func ParseTopology(r io.Reader, name string, def CableSpec) (*Topology, error) {
	t := &Topology{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	var nodeLine, cableLine []int // the line that declared each node, each cable
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "host":
			if len(f) != 2 {
				return nil, fail("host takes one name (host NAME), got %d fields", len(f)-1)
			}
			if _, err := t.AddHost(f[1]); err != nil {
				return nil, fail("%v", err)
			}
			nodeLine = append(nodeLine, line)
		case "switch":
			if len(f) != 3 && len(f) != 4 {
				return nil, fail("switch takes a name, a port count and an optional tier (switch NAME PORTS [tier=N]), got %d fields", len(f)-1)
			}
			ports, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, fail("switch %s: port count %q is not a whole number", f[1], f[2])
			}
			level := 0
			if len(f) == 4 {
				v, ok := strings.CutPrefix(f[3], "tier=")
				n, err := strconv.Atoi(v)
				if !ok || err != nil || n < 1 || n > maxTier {
					return nil, fail("switch %s: %q is not a tier (tier=1 for a leaf, 2 and %d above it)", f[1], f[3], maxTier)
				}
				level = n
			}
			x, err := t.AddSwitch(f[1], ports)
			if err != nil {
				return nil, fail("%v", err)
			}
			t.Nodes[x].Level = level
			nodeLine = append(nodeLine, line)
		case "root":
			if len(f) != 2 {
				return nil, fail("root takes one switch name (root NAME), got %d fields", len(f)-1)
			}
			n, ok := t.Lookup(f[1])
			if !ok {
				return nil, fail("root %s: no switch of that name is declared above", f[1])
			}
			if t.Nodes[n].Kind != Switch {
				return nil, fail("root %s: is a host (line %d); a root is a switch", f[1], nodeLine[n])
			}
			t.Nodes[n].Root = true
		case "cable":
			if len(f) < 3 || len(f) > 10 {
				return nil, fail("cable takes two ports, then an optional length, medium, bit error rate, width, generation, FEC and FEC latency (cable NODE.Port[N] NODE.Port[N] [2.5m] [copper|fibre] [ber=1e-7] [width=1x] [gen=NDR] [fec=rs544] [fec_ns=100]), got %d fields", len(f)-1)
			}
			a, err := parsePortRef(t, f[1])
			if err != nil {
				return nil, fail("%v", err)
			}
			b, err := parsePortRef(t, f[2])
			if err != nil {
				return nil, fail("%v", err)
			}
			spec := def
			var ber float64
			hasBER := false
			var speed Cable // the width=, gen= and fec= overrides
			for _, opt := range f[3:] {
				if m, ok := ParseMedium(opt); ok {
					spec.Medium = m
					continue
				}
				if v, ok := strings.CutPrefix(opt, "ber="); ok {
					r, err := strconv.ParseFloat(v, 64)
					if err != nil || !(r >= 0 && r <= link.MaxBER) { // NaN fails too
						return nil, fail("cable %s: ber=%s is not a post-FEC bit error rate (0 for an error-free cable, up to %g)", f[1], v, link.MaxBER)
					}
					ber, hasBER = r, true
					continue
				}
				if v, ok := strings.CutPrefix(opt, "fec_ns="); ok {
					if speed.HasFECNs {
						return nil, fail("cable %s: fec_ns= is given twice", f[1])
					}
					ns, err := strconv.ParseFloat(v, 64)
					if err != nil || !(ns >= 0 && ns <= link.MaxFECLatencyNs) { // NaN fails too
						return nil, fail("cable %s: fec_ns=%s is not a FEC latency (0 to %g ns; without it the cable takes link.fec_latency_ns, or its own FEC mode's derived latency)", f[1], v, link.MaxFECLatencyNs)
					}
					speed.FECNs, speed.HasFECNs = ns, true
					continue
				}
				if key, v, ok := strings.Cut(opt, "="); ok {
					var parse func(string) (string, error)
					var dst *string
					switch key {
					case "width":
						parse, dst = parseCableWidth, &speed.Width
					case "gen":
						parse, dst = parseCableGen, &speed.Gen
					case "fec":
						parse, dst = parseCableFEC, &speed.FEC
					default:
						return nil, fail("cable %s: %s= is not a cable option (ber=, width=, gen=, fec=, fec_ns=)", f[1], key)
					}
					if *dst != "" {
						return nil, fail("cable %s: %s= is given twice", f[1], key)
					}
					val, err := parse(v)
					if err != nil {
						return nil, fail("%s: %v", opt, err)
					}
					*dst = val
					continue
				}
				num, isLength := strings.CutSuffix(opt, "m")
				v, err := strconv.ParseFloat(num, 64)
				if !isLength || err != nil || !(v >= 0 && v <= 1e5) { // NaN fails too
					return nil, fail("cable %s: %q is neither a length in metres (e.g. 2.5m, 0..100000), a medium (copper, fibre) nor an option (ber=1e-7, width=1x, gen=NDR, fec=rs544, fec_ns=100)", f[1], opt)
				}
				spec.LengthM = v
			}
			if err := checkCableSpeed(def.Link, speed); err != nil {
				return nil, fail("%v", err)
			}
			if err := t.Connect(a, b, spec.LengthM, spec.Medium); err != nil {
				return nil, fail("%v", err)
			}
			c := &t.Cables[len(t.Cables)-1]
			c.BER, c.HasBER = ber, hasBER
			c.Width, c.Gen, c.FEC = speed.Width, speed.Gen, speed.FEC
			c.FECNs, c.HasFECNs = speed.FECNs, speed.HasFECNs
			cableLine = append(cableLine, line)
		default:
			return nil, fail("%q is not a statement (host, switch, root, cable)", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	if err := checkTiers(t); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, nodeLine[err.node], err.msg)
	}
	if err := t.Check(); err != nil {
		// Name the line that declared what the error is about.
		if ce, ok := err.(*CheckError); ok {
			switch {
			case ce.Node >= 0:
				return nil, fmt.Errorf("%s:%d: %v", name, nodeLine[ce.Node], err)
			case ce.Cable >= 0:
				return nil, fmt.Errorf("%s:%d: %v", name, cableLine[ce.Cable], err)
			}
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return t, nil
}

// maxTier is the highest tier a topology file gives a switch: a
// three-level fat tree's cores.
const maxTier = 3

// tierError is checkTiers' refusal, about the switch declared at node.
type tierError struct {
	node int
	msg  string
}

// checkTiers checks a file's tiers (the builders' Node.Level, which
// FormatTopology writes as tier=): every switch has one or none does, and
// hosts attach to tier-1 switches only. D-mod-K reads them to tell a
// Dragonfly+'s leaves from its spines (route_dfly.go), so a wrong tier
// would route the fabric as another shape.
func checkTiers(t *Topology) *tierError {
	var with, without = -1, -1
	for _, x := range t.Switches() {
		if t.Nodes[x].Level > 0 && with < 0 {
			with = x
		}
		if t.Nodes[x].Level == 0 && without < 0 {
			without = x
		}
	}
	if with < 0 {
		return nil
	}
	if without >= 0 {
		return &tierError{without, fmt.Sprintf("switch %s has no tier, but %s has one (tier=%d): give every switch a tier, or none",
			t.Nodes[without].Name, t.Nodes[with].Name, t.Nodes[with].Level)}
	}
	for _, h := range t.Hosts() {
		if q, ok := t.Peer(PortRef{h, 1}); ok && t.Nodes[q.Node].Kind == Switch && t.Nodes[q.Node].Level != 1 {
			return &tierError{q.Node, fmt.Sprintf("switch %s has tier=%d, but host %s is cabled to it: hosts attach to tier-1 switches (leaves)",
				t.Nodes[q.Node].Name, t.Nodes[q.Node].Level, t.Nodes[h].Name)}
		}
	}
	return nil
}

// parsePortRef parses "Fabric.Switch[0].Port[5]" against the nodes declared.
func parsePortRef(t *Topology, s string) (PortRef, error) {
	i := strings.LastIndex(s, ".Port[")
	if i < 0 || !strings.HasSuffix(s, "]") {
		return PortRef{}, fmt.Errorf("%q is not a port (NODE.Port[N])", s)
	}
	node, num := s[:i], s[i+len(".Port["):len(s)-1]
	n, ok := t.Lookup(node)
	if !ok {
		return PortRef{}, fmt.Errorf("%s: node %s is not declared above", s, node)
	}
	p, err := strconv.Atoi(num)
	if err != nil || p < 1 || p > t.Nodes[n].Ports {
		return PortRef{}, fmt.Errorf("%s: %s has ports 1..%d", s, node, t.Nodes[n].Ports)
	}
	return PortRef{n, p}, nil
}

// LoadTopologyFile reads the topology file at path (see ParseTopology).
func LoadTopologyFile(path string, def CableSpec) (*Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTopology(f, path, def)
}

// FormatTopology writes t as a topology file: every node, the roots, then
// every cable with its length and medium, and its bit error rate, width,
// generation, FEC and FEC latency where it has its own, and a builder's
// switch tiers (Node.Level, as tier=). ParseTopology reads it back to the
// same topology.
func FormatTopology(w io.Writer, t *Topology) error {
	bw := bufio.NewWriter(w)
	for _, n := range t.Nodes {
		if n.Kind == Host {
			fmt.Fprintf(bw, "host %s\n", n.Name)
		} else {
			fmt.Fprintf(bw, "switch %s %d", n.Name, n.Ports)
			if n.Level > 0 {
				fmt.Fprintf(bw, " tier=%d", n.Level)
			}
			fmt.Fprintln(bw)
		}
	}
	for _, n := range t.Nodes {
		if n.Root {
			fmt.Fprintf(bw, "root %s\n", n.Name)
		}
	}
	for _, c := range t.Cables {
		fmt.Fprintf(bw, "cable %s %s %sm %s", t.PortName(c.A), t.PortName(c.B),
			strconv.FormatFloat(c.LengthM, 'g', -1, 64), c.Medium)
		if c.HasBER {
			fmt.Fprintf(bw, " ber=%s", strconv.FormatFloat(c.BER, 'g', -1, 64))
		}
		if c.Width != "" {
			fmt.Fprintf(bw, " width=%s", c.Width)
		}
		if c.Gen != "" {
			fmt.Fprintf(bw, " gen=%s", c.Gen)
		}
		if c.FEC != "" {
			fmt.Fprintf(bw, " fec=%s", c.FEC)
		}
		if c.HasFECNs {
			fmt.Fprintf(bw, " fec_ns=%s", strconv.FormatFloat(c.FECNs, 'g', -1, 64))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}
