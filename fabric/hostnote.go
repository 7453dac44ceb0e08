package fabric

import (
	"fmt"
	"strings"

	"github.com/hcasim/hcasim/config"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/link"
)

// HostNote returns a one-line note when a run on HCAs leaves hca.profile
// unset and the default host that gives (hca.Defaults: a ConnectX-5 class
// HCA on PCIe Gen3 x16) cannot read payload from host memory as fast as
// its link sends it: a config that names link.generation NDR and no host
// profile measures the host's PCIe, not the link, and nothing else in the
// output says so. "" when the note does not apply: a synthetic workload
// (no HCA), a named profile, or an hca.pcie section (the user chose the
// host link), or a host link the default PCIe keeps up with.
//
// Both rates come from the models: the PCIe read bound is
// hca.PCIe.ReadBoundGbps of the configured PCIe (completion efficiency and
// tags), the link's is its data rate after encoding (link.Timing).
func HostNote(l *Loaded) string {
	cfg := &l.Config
	switch cfg.Workload.Kind {
	case "perftest", "allreduce", "alltoall", "allgather", "reducescatter", "broadcast", "reduce", "replay":
	default:
		return ""
	}
	if config.Lookup(l.Node, "hca.profile") != nil || config.Lookup(l.Node, "hca.pcie") != nil {
		return ""
	}
	lc := cfg.Link
	if cfg.Topology.Kind != KindBackToBack && cfg.Topology.Kind != KindFile {
		lc = cableLink(lc, Cable{Medium: mediumOf(lc), Gen: cfg.Topology.HostLinkGeneration, Width: cfg.Topology.HostLinkWidth})
	}
	linkGbps := lc.Timing(lc.LengthM).DataRateBps() / 1e9
	pcie := hca.NewPCIe(cfg.HCA.PCIe)
	read := pcie.ReadBoundGbps()
	if read >= linkGbps {
		return ""
	}
	gen := lc.GenerationValue()
	fix := "name a profile whose PCIe keeps up"
	if p := profileFor(string(gen)); p == cfg.HCA.Profile {
		return "" // the default is this generation's host (an EDR ConnectX-5 is PCIe-bound too)
	} else if p != "" {
		fix = "set hca.profile: " + p + ", the " + string(gen) + " host"
	}
	return fmt.Sprintf("note: hca.profile is not set, so every host is the default %s (PCIe Gen%d x%d: DMA reads at most %.1f Gb/s) on %s %s links (%.1f Gb/s): the hosts' PCIe, not the links, bounds bandwidth; %s (profiles: %s)",
		cfg.HCA.Profile, cfg.HCA.PCIe.Gen, cfg.HCA.PCIe.Lanes, read, gen, lc.Width, linkGbps, fix, strings.Join(baseProfiles(), ", "))
}

// mediumOf is the link section's medium, as a host cable takes it.
func mediumOf(lc link.Config) Medium {
	m, _ := ParseMedium(lc.Medium)
	return m
}

// profileFor returns the host profile named for link generation gen
// ("cx7" for NDR: the profile listed as cx7-ndr), or "".
func profileFor(gen string) string {
	suffix := "-" + strings.ToLower(gen)
	for _, n := range hca.ProfileNames() {
		if strings.HasSuffix(n, suffix) {
			return strings.TrimSuffix(n, suffix)
		}
	}
	return ""
}

// baseProfiles lists the host profiles by their short names (cx5 … cx8),
// without the aliases that add a generation (cx7-ndr).
func baseProfiles() []string {
	var out []string
	for _, n := range hca.ProfileNames() {
		if !strings.Contains(n, "-") {
			out = append(out, n)
		}
	}
	return out
}
