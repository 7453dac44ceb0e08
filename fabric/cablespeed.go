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
// lc's generation keeps lc.FEC. An explicit link.fec_latency_ns applies to
// every cable; a derived one is derived per cable (its lanes and rate).
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
	return lc
}

// checkCableSpeed checks a cable's overrides (already parsed; "" = the
// link section's) against one another and against lc, the link section:
// 2x needs HDR or later, and the FEC mode must be one the cable's
// generation runs. The error names the override at fault, as a topology
// file or a config key spells it (width=2x, fec=rs528); the caller adds
// the file and line or the key.
func checkCableSpeed(lc link.Config, c Cable) error {
	if lc.Generation == "" { // a CableSpec made without the link section
		lc = link.Defaults()
	}
	eff := cableLink(lc, c)
	gen := eff.GenerationValue()
	if link.Widths[eff.Width] == 2 && !link.Generations[gen].Min2x {
		if c.Width != "" {
			return fmt.Errorf("width=2x: 2x exists from HDR on, not for %s (1x, 4x, 8x, 12x)", gen)
		}
		return fmt.Errorf("gen=%s: link.width 2x exists from HDR on, not for %s; give the cable width=1x or 4x", gen, gen)
	}
	// A FEC the cable does not name is lc.FEC on lc's generation (valid:
	// link.fec was checked) or "default" on another.
	if f := eff.FEC; c.FEC != "" && f != "default" && !slices.Contains(link.FECModes(gen), link.FEC(f)) {
		names := []string{"default"}
		for _, m := range link.FECModes(gen) {
			names = append(names, string(m))
		}
		return fmt.Errorf("fec=%s: not a FEC mode of %s links (%s)", f, gen, strings.Join(names, ", "))
	}
	return nil
}
