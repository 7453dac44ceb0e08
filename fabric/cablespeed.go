package fabric

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hcasim/hcasim/link"
)

// A cable may run at another speed than the link section's: a topology
// file's width=, gen= and fec= on its line, topology.host_link_width and
// topology.host_link_generation for a builder's host cables, and
// topology.degraded_links for named cables. Every part of the model that
// serializes reads its own port's timing (link.Port.Timing), so a cable's
// speed is all that changes.

// parseCableWidth parses a width= value: 1x, 2x, 4x, 8x, 12x (any case).
func parseCableWidth(v string) (string, error) {
	w := strings.ToLower(v)
	if link.Widths[w] == 0 {
		return "", fmt.Errorf("not a link width (%s)", strings.Join(link.WidthNames, ", "))
	}
	return w, nil
}

// parseCableGen parses a gen= value: SDR … XDR (any case).
func parseCableGen(v string) (string, error) {
	g, ok := link.ParseGeneration(v)
	if !ok {
		return "", fmt.Errorf("not a link generation (%s)", strings.Join(link.GenerationNames, ", "))
	}
	return string(g), nil
}

// parseCableFEC parses a fec= value: default or a link.fec mode.
func parseCableFEC(v string) (string, error) {
	f := strings.ToLower(v)
	if f != "default" && !slices.Contains(link.FECNames, f) {
		return "", fmt.Errorf("not a FEC mode (default, %s)", strings.Join(link.FECNames, ", "))
	}
	return f, nil
}

// cableLink returns the link config cable c runs at: lc with the cable's
// medium and its width, generation and FEC overrides. A cable of another
// generation than lc's takes that generation's default FEC unless it names
// one, since lc's FEC mode may not exist there (rs528 is EDR's); a cable of
// lc's generation keeps lc.FEC. A cable's own FEC latency (fec_ns=) is
// its; otherwise an explicit link.fec_latency_ns applies to every cable,
// and a derived one is derived per cable (its lanes, rate and FEC mode).
func cableLink(lc link.Config, c Cable) link.Config {
	lc.Medium = c.Medium.String()
	if c.Gen != "" && c.Gen != string(lc.GenerationValue()) {
		lc.Generation = c.Gen
		lc.FEC = "default"
	}
	if c.Width != "" {
		lc.Width = c.Width
	}
	if c.FEC != "" {
		lc.FEC = c.FEC
	}
	if c.HasFECNs {
		lc.FECLatencyNs = c.FECNs
	}
	return lc
}

// cableSpeedError is a cable override that does not fit the others or the
// link section: Opt is width, gen or fec, Val its value, Msg what is wrong
// (without the value). A topology file shows it as "width=2x: Msg"
// (Error), a config key as "topology.host_link_width: 2x is Msg" (keyed).
type cableSpeedError struct{ Opt, Val, Msg string }

func (e *cableSpeedError) Error() string { return e.Opt + "=" + e.Val + ": " + e.Msg }

// keyed returns the error as the config key key reports it.
func (e *cableSpeedError) keyed(key string) error {
	return fmt.Errorf("%s: %s is %s", key, e.Val, e.Msg)
}

// checkCableSpeed checks a cable's overrides (already parsed; "" = the
// link section's) against one another and against lc, the link section:
// 2x needs HDR or later, and the FEC mode must be one the cable's
// generation runs. The error is a *cableSpeedError naming the override at
// fault.
func checkCableSpeed(lc link.Config, c Cable) error {
	if lc.Generation == "" { // a CableSpec made without the link section
		lc = link.Defaults()
	}
	eff := cableLink(lc, c)
	gen := eff.GenerationValue()
	if link.Widths[eff.Width] == 2 && !link.Generations[gen].Min2x {
		if c.Width != "" {
			return &cableSpeedError{"width", c.Width, fmt.Sprintf("not a width of %s links (2x exists from HDR on: 1x, 4x, 8x, 12x)", gen)}
		}
		return &cableSpeedError{"gen", c.Gen, "not a generation of 2x links (link.width 2x exists from HDR on: HDR, NDR, XDR); give the cable a width too"}
	}
	// A FEC the cable does not name is lc.FEC on lc's generation (valid:
	// link.fec was checked) or "default" on another.
	if f := eff.FEC; c.FEC != "" && f != "default" && !slices.Contains(link.FECModes(gen), link.FEC(f)) {
		names := []string{"default"}
		for _, m := range link.FECModes(gen) {
			names = append(names, string(m))
		}
		return &cableSpeedError{"fec", c.FEC, fmt.Sprintf("not a FEC mode of %s links (%s)", gen, strings.Join(names, ", "))}
	}
	return nil
}

// BuildTopology builds the fabric c describes, cables and all, as a run
// builds it before the subnet manager routes it (hcasim topology writes it
// as a topology file).
func (c *Config) BuildTopology() (*Topology, error) {
	return c.Topology.Build(c.Switch.Radix, hostCable(c))
}

// CheckOneLinkSpeed returns an error naming the first cable of the
// configured fabric that runs at another width, generation or FEC than the
// link section, and the key that makes it so; nil when every cable runs at
// link.*'s speed. For what takes one link speed for every port (hcasim
// rtl); what is the design point's error says why it cannot.
func (c *Config) CheckOneLinkSpeed(what string) error {
	t := &c.Topology
	if t.Kind != KindFile && t.HostLinkWidth == "" && t.HostLinkGeneration == "" && t.DegradedLinks == nil {
		return nil // a builder's cables all take link.*
	}
	topo, err := c.BuildTopology()
	if err != nil {
		return err
	}
	want := speedOf(c.Link)
	for _, cb := range topo.Cables {
		if got := speedOf(cableLink(c.Link, cb)); got != want {
			key := "topology.degraded_links"
			switch {
			case t.Kind == KindFile && t.Text != "":
				key = "topology.text"
			case t.Kind == KindFile:
				key = "topology.file"
			case t.HostLinkWidth != "" && (topo.Nodes[cb.A.Node].Kind == Host || topo.Nodes[cb.B.Node].Kind == Host):
				key = "topology.host_link_width"
			case t.HostLinkGeneration != "" && (topo.Nodes[cb.A.Node].Kind == Host || topo.Nodes[cb.B.Node].Kind == Host):
				key = "topology.host_link_generation"
			}
			return fmt.Errorf("%s: the cable %s to %s runs at %s, not link.*'s %s; %s", key,
				topo.PortName(cb.A), topo.PortName(cb.B), got, want, what)
		}
	}
	return nil
}

// speedOf names a link config's width, generation and FEC: "1x NDR rs544".
func speedOf(lc link.Config) string {
	return fmt.Sprintf("%s %s %s", strings.ToLower(lc.Width), lc.GenerationValue(), lc.FECMode())
}

// checkBuilderCableSpeeds builds a builder's fabric when a design point
// gives cables their own speed, so that topology.degraded_links naming a
// port the fabric lacks, or a speed the link section rules out, fails
// when the config is loaded (once, before a sweep's points run) rather
// than point by point; and checks link.fc_refresh_ns against those
// cables. A topology file is read when the run builds it.
func (c *Config) checkBuilderCableSpeeds() error {
	t := &c.Topology
	if t.Kind == KindFile || (t.HostLinkWidth == "" && t.HostLinkGeneration == "" && t.DegradedLinks == nil) {
		return nil
	}
	topo, err := c.BuildTopology()
	if err != nil {
		return err
	}
	if err := c.checkCableRefresh(topo); err != nil {
		return err
	}
	return c.checkCablePreFEC(topo)
}
