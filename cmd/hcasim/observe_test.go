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
	err = runOutcome(runErr, finish(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invariant lossless violated")
	assert.Contains(t, err.Error(), "delivered twice")
}

// TestEndChecksRunIsReported: the checkers' end-of-run checks (nothing
// lost, every credit back) need an idle fabric; a checked run says in its
// metrics whether they ran, so a --check that passed without them does not
// read as one that passed with them. A perftest settles (true); the same
// run's view marked unsettled, as a run that never goes idle leaves it,
// reports false.
func TestEndChecksRunIsReported(t *testing.T) {
	yaml, ok := configs.Lookup("edr.yaml")
	require.True(t, ok)
	for _, settled := range []bool{true, false} {
		l, err := fabric.Load(yaml, []string{"workload.test=write_bw", "workload.iterations=10", "sim.check=true"})
		require.NoError(t, err)
		obs, finish, err := observersImpl(l, &runFlags{})
		require.NoError(t, err)
		var view *fabric.Simulation
		m, err := fabric.Run(l, fabric.RunOptions{Observe: func(s *fabric.Simulation) { view = s; obs(s) }})
		require.NoError(t, err)
		require.True(t, view.Settled, "a checked perftest settles")
		view.Settled = settled
		require.NoError(t, finish(m))
		assert.Equal(t, settled, m["end_checks_run"])
	}
	// Without --check the key is absent.
	l, err := fabric.Load(yaml, []string{"workload.test=write_bw", "workload.iterations=10"})
	require.NoError(t, err)
	_, finish, err := observersImpl(l, &runFlags{})
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, finish(m))
	assert.NotContains(t, m, "end_checks_run")
}
