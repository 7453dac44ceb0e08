package main

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/hcasim/hcasim/fabric"
	"github.com/hcasim/hcasim/ib"
	"github.com/hcasim/hcasim/verif"
)

// observersImpl builds the --trace, --check, --vcd and --pcap observers of one run:
// a hook that attaches them to the built simulation, and a function that,
// after the run, finishes the checkers and closes the files. A failed
// invariant is returned from finish with its full report. With --check,
// finish also records in the run's metrics (when there are any) whether
// the end-of-run checks ran: they need the fabric idle, and a run that
// could not settle skips them, which a passing --check must not hide.
func observersImpl(l *fabric.Loaded, f *runFlags) (func(*fabric.Simulation), func(map[string]any) error, error) {
	check := l.Config.Sim.Check
	if f.trace == "" && f.vcd == "" && f.pcap == "" && !check {
		return nil, func(map[string]any) error { return nil }, nil
	}
	filter, err := verif.ParseFilter(strings.Join(f.tracePaths, ","), strings.Join(f.traceKinds, ","))
	if err != nil {
		return nil, nil, userErrorf("--trace-kind: %v", err)
	}
	var (
		traceFile *os.File
		rec       *verif.Recorder
		vcd       *verif.VCDRecorder
		chk       *verif.Checkers
		view      *fabric.Simulation
	)
	if f.trace != "" {
		traceFile, err = os.Create(f.trace)
		if err != nil {
			return nil, nil, userErrorf("--trace: %v", err)
		}
		rec = verif.NewRecorder(traceFile, verif.Header{Version: verif.TraceVersion, Config: verif.ConfigHash(l.Identity()),
			Seed: l.Config.Seed}, filter)
	}
	var vcdFile *os.File
	if f.vcd != "" {
		// Made now, so that an unwritable path is refused before the run.
		if vcdFile, err = os.Create(f.vcd); err != nil {
			if traceFile != nil {
				traceFile.Close()
			}
			return nil, nil, userErrorf("--vcd: %v", err)
		}
		vcd = verif.NewVCDRecorder(filter)
	}
	var pcapFile *os.File
	var pcap *verif.PcapRecorder
	if f.pcap != "" {
		if pcapFile, err = os.Create(f.pcap); err != nil {
			for _, o := range []*os.File{traceFile, vcdFile} {
				if o != nil {
					o.Close()
				}
			}
			return nil, nil, userErrorf("--pcap: %v", err)
		}
	}
	attach := func(s *fabric.Simulation) {
		view = s
		if rec != nil || vcd != nil {
			// Blocks that announce waveform-only events (HCA stage
			// handshakes) do so only for a trace or a VCD.
			for _, b := range s.Blocks {
				if st, ok := b.(interface{ EnableStageTrace() }); ok {
					st.EnableStageTrace()
				}
			}
		}
		if rec != nil {
			verif.AttachHook(rec, s.Blocks...)
		}
		if vcd != nil {
			verif.AttachHook(vcd, s.Blocks...)
		}
		if pcapFile != nil {
			pcap = verif.NewPcapRecorder(pcapFile, fmt.Sprintf("hcasim %s %s seed %d", Version(), f.config, l.Config.Seed),
				pcapPorts(s, filter), f.snaplen, ib.AppendWire)
			verif.AttachHook(pcap, s.Blocks...)
		}
		if check {
			cc := verif.CheckConfig{OnViolation: func(*verif.Violation) { s.Stop() }}
			if s.Net != nil {
				cc.Routes = s.Net
				// Adaptive routing reorders a flow's packets by design,
				// on the SLs it applies to; lossless still holds each to
				// one delivery, and the other SLs stay in order.
				cc.ReorderSLs = s.Net.Subnet.ARSLs()
				// Replication: each multicast packet once to every
				// member of its group but the sender.
				cc.Multicast = s.Net.MulticastMembers()
			}
			chk = verif.AttachCheckers(cc, s.Blocks...)
		}
	}
	finish := func(m map[string]any) error {
		var first error
		if rec != nil {
			if err := rec.Flush(); err != nil && first == nil {
				first = fmt.Errorf("--trace: %v", err)
			}
			if err := traceFile.Close(); err != nil && first == nil {
				first = fmt.Errorf("--trace: %v", err)
			}
		}
		if vcdFile != nil {
			if view != nil {
				// The run's end, not Now: a partitioned run's partitions
				// may have run a window past it. A checked run goes on to
				// its settle's end.
				end := view.End()
				if view.Settled {
					end = view.Now()
				}
				if err := vcd.WriteTo(vcdFile, "hcasim "+Version()+" "+f.config, end); err != nil && first == nil {
					first = fmt.Errorf("--vcd: %v", err)
				}
			}
			if err := vcdFile.Close(); err != nil && first == nil {
				first = fmt.Errorf("--vcd: %v", err)
			}
		}
		if pcapFile != nil {
			if pcap != nil {
				if err := pcap.Flush(); err != nil && first == nil {
					first = fmt.Errorf("--pcap: %v", err)
				}
			}
			if err := pcapFile.Close(); err != nil && first == nil {
				first = fmt.Errorf("--pcap: %v", err)
			}
		}
		if chk != nil && view != nil {
			chk.Finish(view.Now(), view.Settled)
			if err := chk.Err(); err != nil {
				return violationError{err}
			}
			if m != nil {
				m["end_checks_run"] = view.Settled
			}
		}
		return first
	}
	return attach, finish, nil
}

// pcapPorts lists the capture interfaces: every port the --trace-path
// globs select (all without them), in build order, each described by what
// it is cabled to and its rate.
func pcapPorts(s *fabric.Simulation, filter verif.Filter) []verif.PcapPort {
	var out []verif.PcapPort
	for _, p := range s.Ports {
		if !filter.SelectsPath(p.Name) {
			continue
		}
		pp := verif.PcapPort{Name: p.Name, SpeedBps: uint64(math.Round(p.Timing().DataRateBps()))}
		if peer := p.Peer(); peer != nil {
			pp.Description = fmt.Sprintf("to %s, %d lanes", peer.Name, p.Timing().Lanes)
		}
		out = append(out, pp)
	}
	return out
}

// violationError is a failed invariant as finish returns it.
type violationError struct{ v error }

func (e violationError) Error() string { return "invariant violated: " + e.v.Error() }

// runOutcome combines a run's error with its observers' (finish): a
// violated invariant comes first, because the checker stopped the run and
// the run's own error ("did not finish ... 0 of 10 messages completed") is
// only its consequence; otherwise the run's error, then finish's.
func runOutcome(runErr, finishErr error) error {
	if _, ok := finishErr.(violationError); ok {
		return finishErr
	}
	if runErr != nil {
		return runErr
	}
	return finishErr
}
