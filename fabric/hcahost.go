package fabric

import (
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/link"
)

// HCAHost puts an HCA on a host of a built network: BuildNetworkOn makes the
// host's port (switch.vls data VLs, hca.vl_buffer_bytes per VL) with the HCA
// as its owner.
type HCAHost struct{ *hca.Device }

// Attach implements HostDevice.
func (h HCAHost) Attach(p *link.Port) { h.Device.Port = p }

// NewHCAHost makes host index's HCA, named after the host.
func NewHCAHost(s *components.Sim, cfg *Config, lid uint16, hostName string) HCAHost {
	d := hca.NewDevice(s, hostName+".HCA", lid, cfg.HCA)
	d.DataVL = cfg.Switch.SL2VLTable()[0] // HCAs send on SL 0
	return HCAHost{d}
}
