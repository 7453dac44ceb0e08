package hca

import (
	"github.com/hcasim/hcasim/components"
	"github.com/hcasim/hcasim/link"
)

// BackToBack builds two hosts, Fabric.Host[0] (LID 1) and Fabric.Host[1]
// (LID 2), each with an HCA, joined by one cable of lc.LengthM metres.
// Ports use one data VL with hca.vl_buffer_bytes of receive buffer.
func BackToBack(s *components.Sim, lc link.Config, a, b Config) (*Device, *Device) {
	return BackToBackQoS(s, lc, a, b, 1, PortQoS{})
}

// BackToBackQoS is BackToBack with vls data VLs on both ports, each
// programmed with q.
func BackToBackQoS(s *components.Sim, lc link.Config, a, b Config, vls int, q PortQoS) (*Device, *Device) {
	da := NewDevice(s, "Fabric.Host[0].HCA", 1, a)
	db := NewDevice(s, "Fabric.Host[1].HCA", 2, b)
	da.SetPortQoS(q)
	db.SetPortQoS(q)
	pa := da.AttachPortVLs(&lc, vls)
	pb := db.AttachPortVLs(&lc, vls)
	link.Connect(pa, pb, lc.Timing(lc.LengthM))
	return da, db
}
