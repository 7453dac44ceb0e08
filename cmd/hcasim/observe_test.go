package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hcasim/hcasim/configs"
	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/link"
)

// twiceOwner hands its owner the first packet for LID 2 twice (the copy on
// VL 15, whose release is a no-op): a duplicate the lossless checker stops
// the run at.
type twiceOwner struct {
	link.Owner
	s     *fabric.Simulation
	fired bool
}

func (o *twiceOwner) PacketArrived(p *link.Port, pkt *ib.Packet, head, tail ib.PS) {
	o.Owner.PacketArrived(p, pkt, head, tail)
	if !o.fired && pkt.DLID == 2 && pkt.PayloadLen > 0 {
		o.fired = true
		cp := o.s.Sim.NewPacket()
		*cp = *pkt
		cp.Payload = append([]byte(nil), pkt.Payload...)
		cp.VL = ib.ManagementVL
		o.Owner.PacketArrived(p, cp, head, tail)
	}
}

// TestViolationOutranksTheStoppedRun: a checker that finds a violation stops
// the run, so a perftest then fails with "did not finish ... 0 of 10
// messages completed". The user must see the violation, not that: before,
// the run's error won and the report was thrown away.
func TestViolationOutranksTheStoppedRun(t *testing.T) {
	yaml, ok := configs.Lookup("edr.yaml")
	require.True(t, ok)
	l, err := fabric.Load(yaml, []string{"workload.test=write_bw", "workload.iterations=10", "sim.check=true"})
	require.NoError(t, err)
	obs, finish, err := observersImpl(l, &runFlags{})
	require.NoError(t, err)
	var tap *twiceOwner
	_, runErr := fabric.Run(l, fabric.RunOptions{Observe: func(s *fabric.Simulation) {
		obs(s)
		for _, p := range s.Ports {
			if p.Name == "Fabric.Host[1].HCA.Port[1]" {
				tap = &twiceOwner{Owner: p.Owner, s: s}
				p.Owner = tap
			}
		}
	}})
	require.NotNil(t, tap, "host 1's port")
	require.True(t, tap.fired)
	require.Error(t, runErr, "the stopped perftest fails")
	err = runOutcome(runErr, finish())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless violated")
	assert.Contains(t, err.Error(), "delivered twice")
}
