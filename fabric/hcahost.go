package fabric

import (
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/link"
	"github.com/hcasim/hcasim/switchasic"
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
	d.SetPortQoS(PortQoS(&cfg.Switch))
	return HCAHost{d}
}

// PortQoS is how the subnet manager programs an HCA port from the switch
// section: switch.sl2vl (a CA port has one table, OpenSM's qos_ca_sl2vl,
// which the config does not tell apart from the switches') and, with more
// than one data VL, the switches' VL arbitration tables folded onto
// switch.vls VLs (OpenSM's qos_ca_vlarb_* default to the same tables as
// its switch ports'), so the HCA shares its wire between VLs as a switch
// output does.
func PortQoS(sw *switchasic.Config) hca.PortQoS {
	q := hca.PortQoS{SL2VL: sw.SL2VLTable()}
	if sw.VLs > 1 {
		q.VLArbHigh, q.VLArbLow = sw.VLArbTables()
		q.HighLimit = uint8(sw.VLHighLimit)
	}
	return q
}
