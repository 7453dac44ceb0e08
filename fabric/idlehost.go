package fabric

import (
	"fmt"

	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// idleHost is a host that sends nothing and expects nothing: the other hosts
// of a fabric that runs a two-host test without background traffic.
type idleHost struct{}

func (idleHost) Attach(*link.Port) {}

func (idleHost) PortReady(*link.Port) {}

func (idleHost) PacketArrived(p *link.Port, pkt *ib.Packet, _, _ ib.PS) {
	panic(fmt.Sprintf("fabric: idle host %s received packet %d", p.Name, pkt.Seq))
}
