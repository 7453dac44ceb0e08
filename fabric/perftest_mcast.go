package fabric

import (
	"fmt"
	"maps"

	"github.com/hcasim/hcasim/hca"
	"github.com/hcasim/hcasim/workload"
)

// validateMcg checks what a multicast perftest (workload.mcg) cannot do,
// before it is built: each refusal names the key that asks for it (as
// validateMulticast does for the synthetic multicast).
func (c *Config) validateMcg() error {
	if err := c.refuseWithMulticast("workload.mcg: true", "workload.mcg"); err != nil {
		return err
	}
	// The largest message is one packet with a GRH: the buffers must hold
	// it (a UD message is at most the MTU; run.Validate checks that).
	size := min(c.Workload.Size, c.Link.MTU)
	return c.holdsMcastPacket(size)
}

// runMcastPerftest runs perftest's send_bw or send_lat with --mcg: host 0
// sends to a multicast group whose members are hosts 1 …
// workload.mcg_receivers (0: every other host), each with one UD QP
// attached; the subnet manager programs the group's tree into the
// switches' MFTs (AddMulticastGroup, with the sender in it as a send-only
// member, so its leaf switch forwards its packets onto the tree), and for
// send_lat a second group of the sender and receiver 0 carries the pongs.
func runMcastPerftest(cfg *Config, opts RunOptions) (map[string]any, error) {
	w := cfg.Workload
	run := perftestRun(cfg)
	if err := run.Validate(); err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	s := newSim(cfg)
	view := &Simulation{Sim: s}
	topo, sub, err := ConfigureFabric(cfg, cfg.Seed)
	if err != nil {
		return nil, err
	}
	n := len(topo.Hosts())
	recv := w.McgReceivers
	if recv == 0 {
		recv = n - 1
	}
	if recv > n-1 {
		return nil, &UnsupportedError{Msg: fmt.Sprintf("workload.mcg_receivers: %d is more than the fabric's %d hosts less the sender (0 for all of them, 1 to %d)", recv, n, n-1)}
	}
	for _, c := range topo.Cables {
		if c.HasBER && c.BER > 0 {
			return nil, &UnsupportedError{Msg: fmt.Sprintf("topology: a cable's ber=%g with workload.mcg is not modelled (a datagram copy lost to a link error is not resent); give its line ber=0 or none", c.BER)}
		}
	}
	members := make([]int, recv+1) // the sender, host 0, and the receivers
	for i := range members {
		members[i] = i
	}
	group, err := sub.AddMulticastGroup(members)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	pongMLID := uint16(0)
	if run.Test == "send_lat" {
		pong, err := sub.AddMulticastGroup([]int{0, 1})
		if err != nil {
			return nil, &UnsupportedError{Msg: err.Error()}
		}
		pongMLID = pong.MLID
	}
	if err := sub.CheckMulticastDeadlock(uint8(w.SL), nil); err != nil {
		return nil, &UnsupportedError{Msg: fmt.Sprintf("workload.mcg_receivers: %v", err)}
	}
	var inTest []int
	for h := 0; h <= recv; h++ {
		inTest = append(inTest, topo.Hosts()[h])
	}
	rates := hostTimings(cfg, topo, inTest)
	devs := make([]*hca.Device, recv+1)
	net, err := BuildNetworkOn(cfg, s, topo, sub, func(i int, lid uint16, name string) HostDevice {
		if i <= recv {
			h := NewHCAHost(s, cfg, lid, name)
			devs[i] = h.Device
			return h
		}
		return workload.NewIdleHost(s, name)
	})
	if err != nil {
		return nil, err
	}
	view.Ports, view.Blocks, view.Net = net.Ports, net.Blocks(), net
	pt, err := workload.BuildMcastPerftestOn(s, devs[0], devs[1:], group.MLID, pongMLID, run)
	if err != nil {
		return nil, &UnsupportedError{Msg: err.Error()}
	}
	if opts.Observe != nil {
		opts.Observe(view)
	}
	if opts.Started != nil {
		opts.Started(view)
	}
	var fm map[string]any
	if cfg.Sim.Check {
		pt.OnEnd = func() {
			fm = perftestFabricMetrics(cfg, s, nil, rates, view)
			settlePerftest(cfg, view, nil)
		}
	}
	m, err := pt.Run()
	if err != nil {
		return nil, view.explainTimeLimit(cfg, err)
	}
	if fm == nil {
		fm = perftestFabricMetrics(cfg, s, nil, rates, view)
	}
	maps.Copy(m, fm)
	m["mcast_tree_switches"] = len(group.Switches)
	// What the switches did with the copies: rounds per packet above 1
	// is fanout splitting (fabric.md, "the fanout-splitting lock").
	mcastSwitchMetrics(net, m)
	return m, nil
}
